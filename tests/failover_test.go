package tests

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Failover between endpoints, end to end: several endpoints point at one mock upstream,
// the failing ones under a /fault/NAME/ prefix that makes the mock fail every request.

// endpointSpec is one entry of an upstreams file.
type endpointSpec struct {
	ID       int    `json:"id"`
	URL      string `json:"url"`
	Model    string `json:"model"`
	Wire     string `json:"wire"`
	Priority int    `json:"priority"`
}

// upstreamsEnv writes the upstreams file of eps and returns the settings that use it
// instead of the harness's one endpoint.
func upstreamsEnv(t *testing.T, eps []endpointSpec, extra ...string) []string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"endpoints": eps})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "upstreams.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return append([]string{"PHASEFLOW_UPSTREAMS_FILE=" + path, "PHASEFLOW_UPSTREAM_URL="}, extra...)
}

// faultURL is the base URL under which the mock at mockURL fails every request with fault.
func faultURL(mockURL, fault string) string {
	return strings.TrimSuffix(mockURL, "/v1") + "/fault/" + fault + "/v1"
}

// refusedURL is a base URL where nothing listens.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String() + "/v1"
}

// requestsUnder counts the requests the mock recorded under a path prefix.
func requestsUnder(t *testing.T, s *server, prefix string) int {
	t.Helper()
	n := 0
	for _, r := range allRecorded(t, s) {
		if strings.HasPrefix(r.Path, prefix) {
			n++
		}
	}
	return n
}

// routeOf returns the routed status and the terminal event of a turn.
func routeOf(t *testing.T, evs []sseEvent) (routed, last map[string]any) {
	t.Helper()
	logs := logged(evs)
	for _, ev := range logs {
		if ev.Name == "status" && ev.Data["state"] == "routed" {
			if routed != nil {
				t.Fatalf("two routed events: %v and %v", routed, ev.Data)
			}
			routed = ev.Data
		}
	}
	return routed, logs[len(logs)-1].Data
}

func TestFailoverFrom429And500AndARefusedConnectionToTheHealthyEndpoint(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		refused := refusedURL(t)
		s := startServerWith(t, func(mockURL string) []string {
			return upstreamsEnv(t, []endpointSpec{
				{ID: 11, URL: faultURL(mockURL, "http_429"), Model: "model-429", Wire: "responses", Priority: 1},
				{ID: 12, URL: faultURL(mockURL, "http_500"), Model: "model-500", Wire: "chat", Priority: 2},
				{ID: 13, URL: refused, Model: "model-refused", Wire: "responses", Priority: 3},
				{ID: 14, URL: mockURL, Model: "healthy-model", Wire: "chat", Priority: 4},
			})
		})
		tok := s.token("failover")
		sid := s.newSession(tok, "en")
		_, evs, _ := fullTurn(t, s, tok, sid, "Draft a momentum strategy for BTC")
		routed, completed := routeOf(t, evs)
		want := map[string]any{"endpoint_id": float64(14), "provider": "openai_compatible", "resolved_model": "healthy-model"}
		for k, v := range want {
			if routed[k] != v || completed[k] != v {
				t.Errorf("%s: routed says %v, completed says %v, want %v (the endpoint that answered)", k, routed[k], completed[k], v)
			}
		}
		if n := requestsUnder(t, s, "/fault/http_429/"); n != 1 {
			t.Errorf("the 429 endpoint got %d requests, want 1", n)
		}
		if n := requestsUnder(t, s, "/fault/http_500/"); n != 1 {
			t.Errorf("the 500 endpoint got %d requests, want 1", n)
		}
	})
}

func TestBreakerSkipsAFailingEndpointAndProbesItAgain(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServerWith(t, func(mockURL string) []string {
			return upstreamsEnv(t, []endpointSpec{
				{ID: 1, URL: faultURL(mockURL, "http_500"), Model: "m", Wire: "responses", Priority: 1},
				{ID: 2, URL: mockURL, Model: "m", Wire: "responses", Priority: 2},
			}, "PHASEFLOW_UPSTREAM_BREAKER_FAILURES=2", "PHASEFLOW_UPSTREAM_BREAKER_COOLDOWN=2s")
		})
		tok := s.token("breaker")
		sid := s.newSession(tok, "en")
		turn := func() {
			t.Helper()
			_, evs, _ := fullTurn(t, s, tok, sid, "tell me more")
			if routed, _ := routeOf(t, evs); routed["endpoint_id"] != float64(2) {
				t.Fatalf("routed to %v, want endpoint 2", routed)
			}
		}
		failing := func() int { return requestsUnder(t, s, "/fault/http_500/") }
		turn()
		turn()
		if n := failing(); n != 2 {
			t.Fatalf("the failing endpoint got %d requests in two turns, want 2", n)
		}
		turn()
		if n := failing(); n != 2 {
			t.Fatalf("with its breaker open the failing endpoint still got a request (%d)", n)
		}
		deadline := time.Now().Add(20 * time.Second)
		for failing() == 2 { // after the 2s cool-down a turn probes it
			if time.Now().After(deadline) {
				t.Fatal("the failing endpoint was never probed after its cool-down")
			}
			turn()
		}
		if n := failing(); n != 3 {
			t.Fatalf("the probe sent %d requests, want exactly one", n-2)
		}
	})
}
