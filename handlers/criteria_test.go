package handlers

import (
	"slices"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
)

func threshold(f float64) *float64 { return &f }

// ready is a strategy block that moves on by its conditions alone.
func ready() Artifacts {
	return Artifacts{phases.KeyStrategyID: "st1", phases.KeyStrategyStatus: phases.StrategyConfirmed,
		phases.KeyBacktestStatus: phases.BacktestCompleted, phases.KeyAdvanceToStressTest: true}
}

func backtestCall(output string) store.ToolCall {
	return store.ToolCall{Name: toolRunBacktest, Status: store.ToolSuccess, Output: output}
}

func TestStrategyStopCriteria(t *testing.T) {
	both := Criteria{MinSharpe: threshold(1.0), MaxDrawdown: threshold(0.15)}
	cases := []struct {
		name     string
		criteria Criteria
		calls    []store.ToolCall
		block    Artifacts // added to ready()
		moves    bool
		statuses []string // of the checks, in order
	}{
		{"no thresholds: the conditions alone", Criteria{}, []store.ToolCall{backtestCall(`{"metrics":{"sharpe":0.2}}`)}, nil, true, nil},
		{"a passing backtest moves on", both, []store.ToolCall{backtestCall(`{"metrics":{"sharpe":1.4,"max_drawdown":0.12}}`)}, nil, true, []string{CheckMet, CheckMet}},
		{"a low Sharpe ratio holds", both, []store.ToolCall{backtestCall(`{"metrics":{"sharpe":0.8,"max_drawdown":0.12}}`)}, nil, false, []string{CheckMissed, CheckMet}},
		{"a drawdown written as negative is its size", both, []store.ToolCall{backtestCall(`{"metrics":{"sharpe":1.4,"max_drawdown":-0.2}}`)}, nil, false, []string{CheckMet, CheckMissed}},
		{"an unreported figure is a warning", both, []store.ToolCall{backtestCall(`{"metrics":{"sharpe":"high"}}`)}, nil, true, []string{CheckUnreported, CheckUnreported}},
		{"a backtest with no metrics is a warning", both, []store.ToolCall{backtestCall(`{"series":[]}`)}, nil, true, []string{CheckUnreported, CheckUnreported}},
		{"the figures of an earlier turn's backtest count", both, nil,
			Artifacts{phases.KeyBacktestMetrics: map[string]any{"sharpe": 0.5, "max_drawdown": 0.1}}, false, []string{CheckMissed, CheckMet}},
		{"the latest backtest replaces the earlier figures", both, []store.ToolCall{backtestCall(`{"metrics":{"sharpe":1.1,"max_drawdown":0.1}}`)},
			Artifacts{phases.KeyBacktestMetrics: map[string]any{"sharpe": 0.5}}, true, []string{CheckMet, CheckMet}},
		{"a failed backtest call changes nothing", both, []store.ToolCall{{Name: toolRunBacktest, Status: store.ToolFailure, Output: `{"metrics":{"sharpe":3}}`}},
			Artifacts{phases.KeyBacktestMetrics: map[string]any{"sharpe": 0.5}}, false, []string{CheckMissed, CheckUnreported}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := New(tc.criteria).For(phases.Strategy)
			block := ready()
			for k, v := range tc.block {
				block[k] = v
			}
			mustValid(t, phases.Strategy, block)
			r := h.PostProcess(PostInput{Artifacts: block, ToolCalls: tc.calls})
			if r.Completed != tc.moves {
				t.Fatalf("Completed = %v, want %v (missing %v, checks %+v)", r.Completed, tc.moves, r.MissingFields, r.Checks)
			}
			var got []string
			for _, c := range r.Checks {
				got = append(got, c.Status)
			}
			if !slices.Equal(got, tc.statuses) {
				t.Fatalf("check statuses = %v, want %v", got, tc.statuses)
			}
			if held := slices.Contains(r.MissingFields, phases.KeyBacktestMetrics); held == tc.moves {
				t.Fatalf("missing_fields = %v: backtest_metrics named %v for a phase that moves %v", r.MissingFields, held, tc.moves)
			}
			mustValid(t, phases.Strategy, r.Artifacts)
		})
	}
}

func TestConfirmMeetsTheStopCriteria(t *testing.T) {
	reg := New(Criteria{MinSharpe: threshold(1.5)})
	block := ready()
	block[phases.KeyBacktestMetrics] = map[string]any{"sharpe": 1.4}
	if r, _ := reg.Confirm(phases.Strategy, block, "st1", true); r.Completed || !slices.Contains(r.MissingFields, phases.KeyBacktestMetrics) {
		t.Fatalf("confirm with a Sharpe ratio under the threshold: completed %v, missing %v", r.Completed, r.MissingFields)
	}
	block[phases.KeyBacktestMetrics] = map[string]any{"sharpe": 1.6}
	if r, _ := reg.Confirm(phases.Strategy, block, "st1", true); !r.Completed {
		t.Fatalf("confirm with a Sharpe ratio over the threshold held: missing %v", r.MissingFields)
	}
}

func TestStressStopCriteria(t *testing.T) {
	run := func(results string) store.ToolCall {
		return store.ToolCall{Name: toolRunStress, Status: store.ToolSuccess,
			Output: `{"stress_report_id":"r1","scenario_set_id":"s1","results":` + results + `}`}
	}
	within := `[{"scenario":"a","pnl":-0.05,"max_drawdown":0.1},{"scenario":"b","pnl":0.02,"max_drawdown":0.03}]`
	over := `[{"scenario":"a","pnl":-0.05,"max_drawdown":0.1},{"scenario":"crash","pnl":-0.14,"max_drawdown":0.19}]`
	cases := []struct {
		name     string
		criteria Criteria
		decision string
		results  string
		moves    bool
		status   string
	}{
		{"no threshold", Criteria{}, phases.DecisionPass, over, true, ""},
		{"losses within the limit pass", Criteria{MaxScenarioLoss: threshold(0.1)}, phases.DecisionPass, within, true, CheckMet},
		{"a scenario over the limit holds a pass", Criteria{MaxScenarioLoss: threshold(0.1)}, phases.DecisionPass, over, false, CheckMissed},
		{"a revision goes back whatever the losses", Criteria{MaxScenarioLoss: threshold(0.1)}, phases.DecisionRevise, over, true, CheckMissed},
		{"no pnl reported is a warning", Criteria{MaxScenarioLoss: threshold(0.1)}, phases.DecisionPass, `[{"scenario":"a","max_drawdown":0.3}]`, true, CheckUnreported},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := New(tc.criteria).For(phases.StressTest)
			r := h.PostProcess(PostInput{Artifacts: Artifacts{phases.KeyStressTestDecision: tc.decision}, ToolCalls: []store.ToolCall{run(tc.results)}})
			if r.Completed != tc.moves {
				t.Fatalf("Completed = %v, want %v (missing %v)", r.Completed, tc.moves, r.MissingFields)
			}
			status := ""
			if len(r.Checks) == 1 {
				status = r.Checks[0].Status
			}
			if status != tc.status {
				t.Fatalf("checks = %+v, want one %q", r.Checks, tc.status)
			}
			mustValid(t, phases.StressTest, r.Artifacts)
		})
	}
}

// TestCriteriaLines: every metric has a line for each outcome in every locale, its figures
// written as the user reads them.
func TestCriteriaLines(t *testing.T) {
	lib := skills.New()
	missed := []Check{
		{Metric: MetricSharpe, Bound: "min", Threshold: 1.5, Value: threshold(1.4), Status: CheckMissed},
		{Metric: MetricMaxDrawdown, Bound: "max", Threshold: 0.15, Value: threshold(0.2), Status: CheckMissed},
		{Metric: MetricScenarioLoss, Bound: "max", Threshold: 0.1, Value: threshold(0.14), Status: CheckMissed, Scenario: "covid_crash_2020"},
		{Metric: MetricSharpe, Bound: "min", Threshold: 1.5, Status: CheckUnreported},
		{Metric: MetricMaxDrawdown, Bound: "max", Threshold: 0.15, Status: CheckUnreported},
		{Metric: MetricScenarioLoss, Bound: "max", Threshold: 0.1, Status: CheckUnreported},
		{Metric: MetricSharpe, Bound: "min", Threshold: 1, Value: threshold(2), Status: CheckMet},
	}
	want := [][]string{{"1.4", "1.5"}, {"20%", "15%"}, {"14%", "10%", "covid_crash_2020"}, {"1.5"}, {"15%"}, {"10%"}}
	for _, locale := range []string{"en", "zh"} {
		lines, err := CriteriaLines(lib, locale, missed)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != len(want) {
			t.Fatalf("%s: %d lines for %d checks that did not pass: %q", locale, len(lines), len(want), lines)
		}
		for i, line := range lines {
			for _, figure := range want[i] {
				if !strings.Contains(line, figure) || strings.Contains(line, "{{") {
					t.Errorf("%s line %d = %q, want it to say %q", locale, i, line, figure)
				}
			}
		}
	}
}
