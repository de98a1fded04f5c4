package metrics

import (
	"database/sql"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	_ "modernc.org/sqlite"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, b)
	}
	return string(b)
}

// TestEveryMethodShows calls each reporting method and checks the line an operator's query
// would find.
func TestEveryMethodShows(t *testing.T) {
	m := New()
	m.RequestObserved("GET", "/api/v1/sessions", 200, "", 12*time.Millisecond)
	m.RequestObserved("POST", "/api/v1/messages", 429, "too_many_turns", time.Millisecond)
	m.RequestObserved("PUT", "", 405, "method_not_allowed", time.Millisecond)
	m.StreamOpened()
	m.StreamOpened()
	m.StreamClosed()
	m.TurnStarted()
	m.TurnStarted()
	m.TurnRestarted()
	m.FirstDelta(300 * time.Millisecond)
	m.TurnEnded(OutcomeFailed, "upstream_timeout", 61*time.Second)
	m.UpstreamError("rate_limited", 2)
	m.CommitObserved(5, 3*time.Millisecond, nil)
	m.CommitObserved(1, time.Millisecond, errors.New("disk full"))
	m.FollowerOpened()
	out := scrape(t, m)
	for _, want := range []string{
		`phaseflow_http_requests_total{code="",method="GET",route="/api/v1/sessions",status="200"} 1`,
		`phaseflow_http_requests_total{code="too_many_turns",method="POST",route="/api/v1/messages",status="429"} 1`,
		`phaseflow_http_requests_total{code="method_not_allowed",method="PUT",route="unmatched",status="405"} 1`,
		`phaseflow_http_request_duration_seconds_count{method="GET",route="/api/v1/sessions"} 1`,
		`phaseflow_event_streams_open 1`,
		`phaseflow_turns_started_total 2`,
		`phaseflow_turn_restarts_total 1`,
		`phaseflow_turns_running 1`,
		`phaseflow_turns_total{code="upstream_timeout",outcome="failed"} 1`,
		`phaseflow_turn_first_delta_seconds_bucket{le="0.5"} 1`,
		`phaseflow_turn_duration_seconds_bucket{outcome="failed",le="80"} 1`,
		`phaseflow_upstream_errors_total{code="rate_limited",endpoint="2"} 1`,
		`phaseflow_eventlog_commit_seconds_count 1`,
		`phaseflow_eventlog_commit_events_sum 5`,
		`phaseflow_eventlog_commit_errors_total 1`,
		`phaseflow_eventlog_followers 1`,
		`go_goroutines `,
		`go_gc_`,
		`process_cpu_seconds_total`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	m.FollowerClosed()
	if v := testutil.ToFloat64(m.followersOpen); v != 0 {
		t.Errorf("followers after close = %v", v)
	}
}

func TestRegisterDB(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	m := New()
	if err := m.RegisterDB("main", db); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterDB("main", db); err == nil {
		t.Error("registering the same pool name twice should fail")
	}
	out := scrape(t, m)
	for _, want := range []string{`go_sql_open_connections{db_name="main"} 1`, `go_sql_wait_count_total{db_name="main"}`, `go_sql_max_open_connections{db_name="main"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

func TestEndpointBreakers(t *testing.T) {
	m := New()
	state := "open"
	if err := m.RegisterEndpoints(func() []EndpointState {
		return []EndpointState{{ID: 2, Provider: "openrouter", State: state, Failures: 3}}
	}); err != nil {
		t.Fatal(err)
	}
	out := scrape(t, m)
	for _, want := range []string{
		`phaseflow_upstream_breaker_state{endpoint="2",provider="openrouter",state="open"} 1`,
		`phaseflow_upstream_breaker_state{endpoint="2",provider="openrouter",state="closed"} 0`,
		`phaseflow_upstream_breaker_failures{endpoint="2"} 3`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	state = "closed"
	if !strings.Contains(scrape(t, m), `state="closed"} 1`) {
		t.Error("the breaker state is not read at scrape time")
	}
}
