package tests

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOperatorMetrics: after a session's turns (a tool call, a correction retry, a resumed
// stream, a phase move), /metrics shows every family an operator watches, with its labels
// and the values those turns made.
func TestOperatorMetrics(t *testing.T) {
	s := startServer(t)
	tok := s.token("operator")
	w := &walk{t: t, s: s, tok: tok}
	w.sid = s.newSession(tok, "en")
	w.say("Draft a BTC momentum strategy")              // validate_strategy on strategy_engine
	w.say("Run the backtest [[fault:broken_xml_once]]") // a correction retry; run_backtest
	a := s.post(tok, w.sid, "Looks good")               // followed, then resumed from its third event
	logs := logged(s.follow(a))
	s.openEvents(ctxFor(t, 20*time.Second), a.eventsURL(), 3).readAll(t)
	strategyID, _ := w.field("strategy", "strategy_id").(string)
	w.confirm(strategyID) // moves to stress_test

	text := metricsText(t, s)
	for _, c := range []struct {
		series string
		min    float64
	}{
		{`phaseflow_tokens_total{endpoint="1",kind="input",model="scripted-model",provider="openai_compatible"}`, 1},
		{`phaseflow_tokens_total{endpoint="1",kind="output",model="scripted-model",provider="openai_compatible"}`, 1},
		{`phaseflow_upstream_requests_total{endpoint="1",outcome="ok"}`, 4},
		{`phaseflow_upstream_first_byte_seconds_count{endpoint="1"}`, 4},
		{`phaseflow_upstream_request_seconds_count{endpoint="1",outcome="ok"}`, 4},
		{`phaseflow_mcp_tool_calls_total{server="strategy_engine",status="success",tool="validate_strategy"}`, 1},
		{`phaseflow_mcp_tool_calls_total{server="strategy_engine",status="success",tool="run_backtest"}`, 1},
		{`phaseflow_mcp_tool_call_seconds_count{server="strategy_engine",tool="run_backtest"}`, 1},
		{`phaseflow_correction_retries_total{reason="`, 1},
		{`phaseflow_event_stream_opens_total{kind="new"}`, 3},
		{`phaseflow_event_stream_opens_total{kind="resume"}`, 1},
		{`phaseflow_event_stream_resume_events_sum`, float64(len(logs) - 3)},
		{`phaseflow_phase_moves_total{from="strategy",to="stress_test"}`, 1},
	} {
		if got := seriesValue(t, text, c.series); got < c.min {
			t.Errorf("%s = %v, want at least %v", c.series, got, c.min)
		}
	}
}

// A freshly started server exports its labelled counters at 0, so a dashboard or an alert
// sees a healthy server rather than no data.
func TestMetricsStartAtZero(t *testing.T) {
	s := startServer(t)
	text := metricsText(t, s)
	for _, series := range []string{
		`phaseflow_phase_moves_total{from="strategy",to="stress_test"}`,
		`phaseflow_phase_moves_total{from="deployment",to="completed"}`,
		`phaseflow_correction_retries_total{reason="missing_final"}`,
		`phaseflow_upstream_requests_total{endpoint="1",outcome="rate_limited"}`,
		`phaseflow_upstream_errors_total{code="model_refused",endpoint="1"}`,
		`phaseflow_turns_total{code="reply_invalid",outcome="failed"}`,
		`phaseflow_skill_runs_total{code="output_truncated",skill="terminal_state",status="failed"}`,
		`phaseflow_skill_model_calls_total{reason="correction",skill="post_views"}`,
		`phaseflow_event_stream_opens_total{kind="resume"}`,
	} {
		if got := seriesValue(t, text, series); got != 0 {
			t.Errorf("%s = %v on a fresh server, want 0 (-1: absent)", series, got)
		}
	}
}

// metricsText scrapes the server's /metrics.
func metricsText(t *testing.T, s *server) string {
	t.Helper()
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// seriesValue sums the values of the lines of text that start with series (a name with
// some or all of its labels), -1 when there is none.
func seriesValue(t *testing.T, text, series string) float64 {
	t.Helper()
	total, found := 0.0, false
	line := regexp.MustCompile(`^(\S+) (\S+)$`)
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, series) {
			continue
		}
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", l, err)
		}
		total, found = total+v, true
	}
	if !found {
		return -1
	}
	return total
}
