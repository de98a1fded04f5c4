package handlers

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// Criteria are the performance thresholds a phase must meet before it moves on (docs/turn.md
// §6's performance threshold), beside the turn limit. A nil threshold is not checked, and
// none is set by default, so a phase moves on its conditions alone.
type Criteria struct {
	// MinSharpe is the lowest Sharpe ratio the latest backtest may report.
	MinSharpe *float64
	// MaxDrawdown is the largest maximum drawdown (a fraction) the latest backtest may
	// report.
	MaxDrawdown *float64
	// MaxScenarioLoss is the largest loss (a fraction) any scenario of the latest stress run
	// may report.
	MaxScenarioLoss *float64
}

// The metrics the criteria judge, as a check names them.
const (
	MetricSharpe       = "sharpe"
	MetricMaxDrawdown  = "max_drawdown"
	MetricScenarioLoss = "scenario_loss"
)

// The outcomes of one check.
const (
	CheckMet        = "met"
	CheckMissed     = "missed"
	CheckUnreported = "unreported" // a warning: a threshold nothing reported a figure for
)

// Check is one threshold judged against the figure the latest run reported.
type Check struct {
	Metric    string   `json:"metric"`
	Bound     string   `json:"bound"` // "min" or "max"
	Threshold float64  `json:"threshold"`
	Value     *float64 `json:"value"` // nil: not reported
	Status    string   `json:"status"`
	// Scenario names the worst scenario of a scenario_loss check.
	Scenario string `json:"scenario,omitempty"`
}

// Missed reports whether any check missed its threshold: only a missed one holds a phase.
func Missed(checks []Check) bool {
	for _, c := range checks {
		if c.Status == CheckMissed {
			return true
		}
	}
	return false
}

// judge compares one figure with one threshold.
func judge(metric, bound string, threshold *float64, value *float64) Check {
	c := Check{Metric: metric, Bound: bound, Threshold: *threshold, Value: value, Status: CheckUnreported}
	switch {
	case value == nil:
	case bound == "min" && *value < *threshold, bound == "max" && *value > *threshold:
		c.Status = CheckMissed
	default:
		c.Status = CheckMet
	}
	return c
}

// backtestChecks judges a strategy block's backtest_metrics.
func (c Criteria) backtestChecks(a Artifacts) []Check {
	m, _ := a[phases.KeyBacktestMetrics].(map[string]any)
	var out []Check
	if c.MinSharpe != nil {
		out = append(out, judge(MetricSharpe, "min", c.MinSharpe, number(m[MetricSharpe])))
	}
	if c.MaxDrawdown != nil {
		dd := number(m[MetricMaxDrawdown])
		if dd != nil {
			v := math.Abs(*dd) // a drawdown is reported as 0.12 or as -0.12
			dd = &v
		}
		out = append(out, judge(MetricMaxDrawdown, "max", c.MaxDrawdown, dd))
	}
	return out
}

// stressChecks judges a stress block's stress_metrics.
func (c Criteria) stressChecks(a Artifacts) []Check {
	if c.MaxScenarioLoss == nil {
		return nil
	}
	m, _ := a[phases.KeyStressMetrics].(map[string]any)
	ch := judge(MetricScenarioLoss, "max", c.MaxScenarioLoss, number(m["worst_loss"]))
	ch.Scenario, _ = m["worst_scenario"].(string)
	return []Check{ch}
}

// number reads a JSON number, nil for anything else.
func number(v any) *float64 {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

// backtestMetrics is the metrics object of the turn's last successful run_backtest (empty
// when it reported none); ran is false when the turn ran no backtest, and the block keeps
// the figures of the one before.
func backtestMetrics(calls []store.ToolCall) (m map[string]any, ran bool) {
	runs := successes[struct {
		Metrics map[string]any `json:"metrics"`
	}](calls, toolRunBacktest)
	if len(runs) == 0 {
		return nil, false
	}
	if m = runs[len(runs)-1].out.Metrics; m == nil {
		m = map[string]any{}
	}
	return m, true
}

// stressMetrics is what the stop criteria read from a stress run: the largest loss of
// any scenario (a loss is a negative pnl) and which scenario it was; empty when no scenario
// reported a pnl.
func stressMetrics(r stressResult) map[string]any {
	m := map[string]any{}
	for _, x := range r.Results {
		if x.PnL == nil {
			continue
		}
		loss := math.Max(0, -*x.PnL)
		if w, ok := m["worst_loss"].(float64); !ok || loss > w {
			m["worst_loss"], m["worst_scenario"] = loss, x.Scenario
		}
	}
	return m
}

// StopCriteria is how a phase's latest run meets its thresholds, as the client reads it
// (completed.metadata.stop_criteria, the confirm route's answer): Met is false when one was
// missed (the phase holds), and Messages says, in the session's locale, each threshold
// that was missed or could not be checked.
type StopCriteria struct {
	Met      bool     `json:"met"`
	Checks   []Check  `json:"checks"`
	Messages []string `json:"messages"`
}

// Explain is checks as the client reads them, nil when there are none (no thresholds
// set). Without texts (s nil) Messages is empty and the checks still say what was judged.
func Explain(s Skills, locale string, checks []Check) (*StopCriteria, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	sc := &StopCriteria{Met: !Missed(checks), Checks: checks, Messages: []string{}}
	if s == nil {
		return sc, nil
	}
	lines, err := CriteriaLines(s, locale, checks)
	sc.Messages = append(sc.Messages, lines...)
	return sc, err
}

// CriteriaLines says, in the locale, what each check that did not pass means for the user:
// a missed threshold holds the phase, an unreported figure is a warning. The texts are the
// skill "criteria" (one line per metric and outcome).
func CriteriaLines(s Skills, locale string, checks []Check) ([]string, error) {
	var lines []string
	var labels map[string]string
	for _, c := range checks {
		if c.Status == CheckMet {
			continue
		}
		if labels == nil {
			text, err := s.Text("criteria", locale)
			if err != nil {
				return nil, fmt.Errorf("handlers: criteria: %w", err)
			}
			_, labels = parseMissing(text)
		}
		line, ok := labels[c.Metric+"."+c.Status]
		if !ok {
			return nil, fmt.Errorf("handlers: criteria: no line for %s.%s in %s", c.Metric, c.Status, locale)
		}
		r := strings.NewReplacer("{{threshold}}", c.figure(c.Threshold), "{{value}}", c.valueText(), "{{scenario}}", c.Scenario)
		lines = append(lines, r.Replace(line))
	}
	return lines, nil
}

// figure writes a figure the way the metric is read, to two decimals at most: a ratio as
// a number, a drawdown or a loss as a percentage.
func (c Check) figure(f float64) string {
	unit := ""
	if c.Metric != MetricSharpe {
		f, unit = f*100, "%"
	}
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) + unit
}

func (c Check) valueText() string {
	if c.Value == nil {
		return ""
	}
	return c.figure(*c.Value)
}
