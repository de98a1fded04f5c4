package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/phaseflow/phaseflow/upstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// A Responses stream that completes, and the pieces to build others.
const (
	createdEv   = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_%d\",\"model\":\"m%d\"}}\n\n"
	deltaEv     = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n"
	completedEv = "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_%d\",\"model\":\"m%d\"}}\n\n"
)

// upstreamServer is a loopback upstream whose behaviour is a function of the request
// number; it counts requests and remembers when each came.
type upstreamServer struct {
	*httptest.Server
	n     atomic.Int32
	mu    sync.Mutex
	times []time.Time
}

func serve(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request)) *upstreamServer {
	t.Helper()
	s := &upstreamServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.times = append(s.times, time.Now())
		s.mu.Unlock()
		h(int(s.n.Add(1)), w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *upstreamServer) requests() int { return int(s.n.Load()) }

// healthy answers a complete stream whose ids carry id.
func healthy(t *testing.T, id int) *upstreamServer {
	return serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, createdEv+deltaEv+completedEv, id, id, id, id)
	})
}

// failing answers every request with status (and Retry-After when given).
func failing(t *testing.T, status int, retryAfter string) *upstreamServer {
	return serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After-Ms", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"status %d","type":"x","code":"c%d"}}`, status, status)
	})
}

// refusedURL is a base URL where nothing listens.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	return url
}

// ep is a Responses endpoint at url.
func ep(t *testing.T, id, priority int, url string) Endpoint {
	t.Helper()
	c := upstream.New(upstream.Config{BaseURL: url})
	t.Cleanup(c.CloseIdleConnections)
	return Endpoint{ID: id, Provider: fmt.Sprintf("p%d", id), Model: fmt.Sprintf("model-%d", id), Priority: priority, Client: c}
}

func newRouter(t *testing.T, opts Options, eps ...Endpoint) *Router {
	t.Helper()
	r, err := New(eps, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// drain collects a stream's events and its error.
func drain(seq func(func(upstream.Event, error) bool)) ([]upstream.Event, error) {
	var evs []upstream.Event
	for ev, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// kinds lists the kinds of evs, each with the endpoint that produced it.
func kinds(evs []upstream.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s@%d/%s", ev.Kind, ev.EndpointID, ev.Provider))
	}
	return out
}

func TestFailover(t *testing.T) {
	answered := []string{"created@4/p4", "text_delta@4/p4", "completed@4/p4"}
	tests := []struct {
		name string
		// first is the failing endpoint, tried before the healthy one (id 4).
		first     func(t *testing.T) (url string, requests func() int)
		opts      Options
		wantFirst int // requests the failing endpoint got
	}{
		{"429", func(t *testing.T) (string, func() int) { s := failing(t, 429, "5000"); return s.URL, s.requests }, Options{}, 1},
		{"500", func(t *testing.T) (string, func() int) { s := failing(t, 500, ""); return s.URL, s.requests }, Options{}, 1},
		{"503", func(t *testing.T) (string, func() int) { s := failing(t, 503, ""); return s.URL, s.requests }, Options{}, 1},
		// A refused connection reaches no server that could count it: requests is nil.
		{"connection refused", func(t *testing.T) (string, func() int) { return refusedURL(t), nil }, Options{}, 0},
		{"no first byte in time", func(t *testing.T) (string, func() int) {
			s := serve(t, func(_ int, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
			return s.URL, s.requests
		}, Options{FirstByteTimeout: 100 * time.Millisecond}, 1},
		{"created, then a 502 before any content (OpenRouter)", func(t *testing.T) (string, func() int) {
			s := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_x\"}}\n\n: OPENROUTER PROCESSING\n\ndata: {\"error\":{\"code\":502,\"message\":\"Provider returned error\"}}\n\n")
			})
			return s.URL, s.requests
		}, Options{}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, requests := tt.first(t)
			good := healthy(t, 4)
			r := newRouter(t, tt.opts, ep(t, 1, 1, url), ep(t, 4, 2, good.URL))
			evs, err := drain(r.Stream(t.Context(), upstream.Request{Model: "configured"}))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(answered, kinds(evs)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff) // the failing endpoint was never announced
			}
			if evs[0].Model != "m4" || evs[0].ResponseID != "resp_4" {
				t.Errorf("created = %+v, want the healthy endpoint's response", evs[0])
			}
			if requests == nil {
				return
			}
			if got := requests(); got != tt.wantFirst {
				t.Errorf("the failing endpoint got %d requests, want %d", got, tt.wantFirst)
			}
		})
	}
}

func TestFailoverThroughEveryKindToTheHealthyOne(t *testing.T) {
	r429, r500, good := failing(t, 429, "1"), failing(t, 500, ""), healthy(t, 9)
	r := newRouter(t, Options{},
		ep(t, 1, 1, r429.URL), ep(t, 2, 2, r500.URL), ep(t, 3, 3, refusedURL(t)), ep(t, 9, 4, good.URL))
	evs, err := drain(r.Stream(t.Context(), upstream.Request{}))
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].EndpointID != 9 || evs[0].Provider != "p9" {
		t.Fatalf("routed to %d/%s, want endpoint 9", evs[0].EndpointID, evs[0].Provider)
	}
	if r429.requests() != 1 || r500.requests() != 1 || good.requests() != 1 {
		t.Fatalf("requests 429:%d 500:%d healthy:%d, want one each", r429.requests(), r500.requests(), good.requests())
	}
}

func TestNoSilentSwitchOnceCommitted(t *testing.T) {
	tests := []struct {
		name    string
		handler func(n int, w http.ResponseWriter, r *http.Request)
		want    []string
		code    upstream.Kind
	}{
		{"error after a delta", func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, createdEv+deltaEv+"data: {\"error\":{\"code\":503,\"message\":\"overloaded\"}}\n\n", 1, 1)
		}, []string{"created@1/p1", "text_delta@1/p1"}, upstream.KindUnavailable},
		{"a refusal is not failed over", func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"bad","type":"invalid_request_error","code":"x"}}`)
		}, nil, upstream.KindProvider},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, second := serve(t, tt.handler), healthy(t, 2)
			r := newRouter(t, Options{}, ep(t, 1, 1, first.URL), ep(t, 2, 2, second.URL))
			evs, err := drain(r.Stream(t.Context(), upstream.Request{}))
			if diff := cmp.Diff(tt.want, kinds(evs)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			var ue *upstream.Error
			if !errors.As(err, &ue) || ue.Kind != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
			if second.requests() != 0 {
				t.Fatalf("the second endpoint got %d requests, want none", second.requests())
			}
		})
	}
}

func TestRetryAfterIsHonouredOnTheSameEndpoint(t *testing.T) {
	s := serve(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After-Ms", "300")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, createdEv+deltaEv+completedEv, 1, 1, 1, 1)
	})
	r := newRouter(t, Options{}, ep(t, 1, 1, s.URL))
	if _, err := drain(r.Stream(t.Context(), upstream.Request{})); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	gap := s.times[1].Sub(s.times[0])
	s.mu.Unlock()
	if gap < 300*time.Millisecond {
		t.Fatalf("retried after %v, want at least the 300ms of Retry-After-Ms", gap)
	}
}

func TestRetryAfterIsCappedAndTheDeadlineWins(t *testing.T) {
	s := failing(t, 429, "60000")
	r := newRouter(t, Options{RetryAfterCap: 200 * time.Millisecond, MaxAttempts: 3}, ep(t, 1, 1, s.URL))
	start := time.Now()
	_, err := drain(r.Stream(t.Context(), upstream.Request{}))
	if !errors.Is(err, upstream.ErrRateLimited) || s.requests() != 3 {
		t.Fatalf("err = %v after %d requests, want rate_limited after 3", err, s.requests())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v: the 60s Retry-After was not capped", took)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	r = newRouter(t, Options{RetryAfterCap: time.Minute}, ep(t, 1, 1, s.URL))
	start = time.Now()
	_, err = drain(r.Stream(ctx, upstream.Request{}))
	if !errors.Is(err, upstream.ErrRateLimited) || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v, want the last rate_limited at once: no wait past the deadline", err, time.Since(start))
	}
}

func TestBreakerSkipsAFailingEndpointAndProbesItLater(t *testing.T) {
	bad, good := failing(t, 500, ""), healthy(t, 2)
	r := newRouter(t, Options{BreakerFailures: 2, BreakerCooldown: 300 * time.Millisecond},
		ep(t, 1, 1, bad.URL), ep(t, 2, 2, good.URL))
	turn := func() {
		t.Helper()
		evs, err := drain(r.Stream(t.Context(), upstream.Request{}))
		if err != nil || evs[0].EndpointID != 2 {
			t.Fatalf("turn routed to %v, err %v; want endpoint 2", kinds(evs), err)
		}
	}
	turn()
	turn()
	if bad.requests() != 2 {
		t.Fatalf("the failing endpoint got %d requests in two turns, want 2", bad.requests())
	}
	st := r.EndpointStates()
	if st[0].ID != 1 || st[0].State != StateOpen || st[0].ConsecutiveFailures != 2 || st[0].OpenUntil.IsZero() || st[1].State != StateClosed {
		t.Fatalf("states after two failures = %+v, want endpoint 1 open", st)
	}
	turn()
	if bad.requests() != 2 {
		t.Fatalf("the open breaker let a request through: %d", bad.requests())
	}
	time.Sleep(time.Until(st[0].OpenUntil)) // the cool-down itself is what is tested
	turn()
	if bad.requests() != 3 {
		t.Fatalf("after the cool-down the endpoint got %d requests, want one probe (3)", bad.requests())
	}
	if st := r.EndpointStates(); st[0].State != StateOpen {
		t.Fatalf("after a failed probe the state is %s, want open", st[0].State)
	}
}

func TestAllBreakersOpenStillTries(t *testing.T) {
	s := failing(t, 500, "")
	r := newRouter(t, Options{BreakerFailures: 1, MaxAttempts: 1}, ep(t, 1, 1, s.URL))
	for i := range 2 {
		if _, err := drain(r.Stream(t.Context(), upstream.Request{})); !errors.Is(err, upstream.ErrUnavailable) {
			t.Fatalf("turn %d: err = %v, want the endpoint's own upstream_unavailable", i+1, err)
		}
	}
	if s.requests() != 2 {
		t.Fatalf("%d requests, want 2: a lone endpoint is never locked out by its breaker", s.requests())
	}
}

func TestEqualPrioritiesShareTheLoad(t *testing.T) {
	a, b := healthy(t, 1), healthy(t, 2)
	r := newRouter(t, Options{}, ep(t, 1, 5, a.URL), ep(t, 2, 5, b.URL))
	for range 4 {
		if _, err := drain(r.Stream(t.Context(), upstream.Request{})); err != nil {
			t.Fatal(err)
		}
	}
	if a.requests() != 2 || b.requests() != 2 {
		t.Fatalf("requests %d and %d, want 2 and 2", a.requests(), b.requests())
	}
}

func TestEndpointModelReplacesTheRequestModel(t *testing.T) {
	got := make(chan string, 1)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, createdEv+completedEv, 1, 1, 1, 1)
	}))
	t.Cleanup(s.Close)
	r := newRouter(t, Options{}, ep(t, 1, 1, s.URL))
	if _, err := drain(r.Stream(t.Context(), upstream.Request{Model: "configured"})); err != nil {
		t.Fatal(err)
	}
	if body := <-got; body != `{"model":"model-1","stream":true}` {
		t.Fatalf("body = %s, want the endpoint's model", body)
	}
}

func TestNewRefusesBadEndpoints(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New accepted no endpoints")
	}
	c := upstream.New(upstream.Config{BaseURL: "http://127.0.0.1:9"})
	if _, err := New([]Endpoint{{ID: 1, Client: c}, {ID: 1, Client: c}}, Options{}); err == nil {
		t.Error("New accepted a duplicate id")
	}
}

// A JSON request goes to each endpoint in that endpoint's output mode, and the events say
// which mode the answering endpoint was sent: the first endpoint (structured) fails, the
// second (text_json) answers.
func TestEachEndpointGetsItsOwnJSONMode(t *testing.T) {
	bodies := make(chan map[string]any, 2)
	record := func(status int) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			bodies <- body
			if status != http.StatusOK {
				w.WriteHeader(status)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, createdEv+deltaEv+completedEv, 2, 2, 2, 2)
		}))
		t.Cleanup(s.Close)
		return s
	}
	first, second := ep(t, 1, 1, record(http.StatusServiceUnavailable).URL), ep(t, 2, 2, record(http.StatusOK).URL)
	first.JSONMode, second.JSONMode = upstream.JSONModeStructured, upstream.JSONModeTextJSON
	r := newRouter(t, Options{}, first, second)
	req := upstream.Request{Instructions: "Extract.", JSON: &upstream.JSONOutput{Name: "s", Schema: json.RawMessage(`{}`), TextRules: "Only JSON."}}
	evs, err := drain(r.Stream(t.Context(), req))
	if err != nil {
		t.Fatal(err)
	}
	if b := <-bodies; b["text"] == nil || b["instructions"] != "Extract." {
		t.Errorf("structured endpoint got %v, want text.format and the bare instructions", b)
	}
	if b := <-bodies; b["text"] != nil || b["instructions"] != "Extract. Only JSON." {
		t.Errorf("text_json endpoint got %v, want no text.format and the rules appended", b)
	}
	for _, ev := range evs {
		if ev.OutputMode != upstream.JSONModeTextJSON || ev.EndpointID != 2 {
			t.Errorf("event %s: endpoint %d, mode %q; want 2, text_json", ev.Kind, ev.EndpointID, ev.OutputMode)
		}
	}
}
