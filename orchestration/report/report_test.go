package report

import (
	"bytes"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/store"
)

// recorder keeps what a turn reported, one line per call.
type recorder struct {
	Metrics
	calls []string
}

func (r *recorder) Tokens(provider, model string, endpoint, in, out int) {
	r.calls = append(r.calls, "tokens "+provider+" "+model+" "+itoa(endpoint)+" "+itoa(in)+" "+itoa(out))
}
func (r *recorder) ToolCall(server, tool, status string, d time.Duration) {
	r.calls = append(r.calls, "tool "+server+" "+tool+" "+status+" "+d.String())
}
func (r *recorder) CorrectionRetry(reason string) { r.calls = append(r.calls, "retry "+reason) }
func (r *recorder) UpstreamError(code string, endpoint int) {
	r.calls = append(r.calls, "upstream "+code+" "+itoa(endpoint))
}
func (r *recorder) PhaseMoved(from, to string) { r.calls = append(r.calls, "move "+from+" "+to) }

func itoa(n int) string { return strconv.Itoa(n) }

func TestEnded(t *testing.T) {
	model := "gpt-4o-mini"
	out := &stream.Outcome{Attempts: 2, Refused: [][]thinkingml.Issue{{{Code: "malformed_xml"}}},
		Result: stream.Result{Usage: &events.Usage{InputTokens: 120, OutputTokens: 30}},
		Calls: []store.ToolCall{
			{ServerLabel: "strategy_engine", Name: "run_backtest", Status: store.ToolSuccess, DurationMS: 1500},
			{ServerLabel: "rogue", Name: "invented_tool", Status: store.ToolFailure, DurationMS: 10},
		}}
	cases := []struct {
		name  string
		turn  Turn
		calls []string
		line  []string // in the log line
	}{
		{"a completed turn that moved", Turn{MessageID: "m1", Route: events.Route{Provider: "openai", ResolvedModel: &model, EndpointID: 2},
			Outcome: out, Status: "completed", Move: &events.PhaseChange{From: "strategy", To: "stress_test"}, FirstDelta: 300 * time.Millisecond},
			[]string{"tokens openai gpt-4o-mini 2 120 30", "tool strategy_engine run_backtest success 1.5s", "tool other other failure 10ms",
				"retry malformed_xml", "move strategy stress_test"},
			[]string{"level=INFO", "turn finished", "message_id=m1", "input_tokens=120", "first_delta=300ms", "attempts=2", "phase_to=stress_test"}},
		{"an upstream failure", Turn{MessageID: "m2", Route: events.Route{EndpointID: 1}, Outcome: &stream.Outcome{Attempts: 1},
			Status: "failed", Code: "rate_limited", UpstreamFailure: true},
			[]string{"upstream rate_limited 1"},
			[]string{"level=WARN", "turn failed", "code=rate_limited"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			m := &recorder{Metrics: Discard()}
			New(slog.New(slog.NewTextHandler(&log, nil)), m, []string{"strategy_engine"}).Ended(tc.turn)
			if !slices.Equal(m.calls, tc.calls) {
				t.Errorf("reported %q, want %q", m.calls, tc.calls)
			}
			if n := strings.Count(log.String(), "\n"); n != 1 {
				t.Errorf("%d log lines, want one:\n%s", n, log.String())
			}
			for _, want := range tc.line {
				if !strings.Contains(log.String(), want) {
					t.Errorf("log line lacks %q:\n%s", want, log.String())
				}
			}
		})
	}
}
