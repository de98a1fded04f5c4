package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestOperatorFamilies: each family an operator watches shows with its labels, and the
// whole registry passes the Prometheus linter (what promtool check metrics runs).
func TestOperatorFamilies(t *testing.T) {
	m := New()
	m.UpstreamRequest(1, "ok", 80*time.Millisecond, 2*time.Second)
	m.UpstreamRequest(2, "rate_limited", 0, 30*time.Millisecond)
	m.Tokens("openai", "gpt-4o-mini", 1, 1200, 340)
	m.ToolCall("strategy_engine", "run_backtest", "success", 1500*time.Millisecond)
	m.CorrectionRetry("malformed_xml")
	m.StreamResumed(false, 0)
	m.StreamResumed(true, 12)
	m.PhaseMoved("strategy", "stress_test")
	out := scrape(t, m)
	for _, want := range []string{
		`phaseflow_upstream_requests_total{endpoint="1",outcome="ok"} 1`,
		`phaseflow_upstream_requests_total{endpoint="2",outcome="rate_limited"} 1`,
		`phaseflow_upstream_first_byte_seconds_count{endpoint="1"} 1`,
		`phaseflow_upstream_request_seconds_bucket{endpoint="1",outcome="ok",le="2"} 1`,
		`phaseflow_tokens_total{endpoint="1",kind="input",model="gpt-4o-mini",provider="openai"} 1200`,
		`phaseflow_tokens_total{endpoint="1",kind="output",model="gpt-4o-mini",provider="openai"} 340`,
		`phaseflow_mcp_tool_calls_total{server="strategy_engine",status="success",tool="run_backtest"} 1`,
		`phaseflow_mcp_tool_call_seconds_sum{server="strategy_engine",tool="run_backtest"} 1.5`,
		`phaseflow_correction_retries_total{reason="malformed_xml"} 1`,
		`phaseflow_event_stream_opens_total{kind="new"} 1`,
		`phaseflow_event_stream_opens_total{kind="resume"} 1`,
		`phaseflow_event_stream_resume_events_sum 12`,
		`phaseflow_phase_moves_total{from="strategy",to="stress_test"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if strings.Contains(out, `phaseflow_upstream_first_byte_seconds_count{endpoint="2"}`) {
		t.Error("a request that sent nothing was observed for its first byte")
	}
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "phaseflow_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}
