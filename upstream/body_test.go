package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"
	"weak"
)

// A reply streams for minutes and its request's body is the whole prompt: once the
// upstream has answered, nothing of the client's or net/http's may keep the body (the turn
// keeps its trace until it records it). The trace here keeps only a weak pointer.
func TestASentRequestLetsItsBodyGo(t *testing.T) {
	got := make(chan string, 1)
	url, release := pausedUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- string(body)
	})
	c := New(Config{BaseURL: url})
	t.Cleanup(c.CloseIdleConnections)

	var body weak.Pointer[byte]
	ctx := WithTrace(t.Context(), func(s Sent) { body = weak.Make(&s.body[0]) })
	prompt := strings.Repeat("a long conversation ", 200)
	deltas := 0
	for ev, err := range c.Stream(ctx, Request{Model: "m", Instructions: prompt}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != EventTextDelta {
			continue
		}
		deltas++
		runtime.GC()
		if body.Value() != nil {
			t.Error("the request's body is still held while its reply streams")
		}
		release()
	}
	if deltas != 1 {
		t.Fatalf("%d deltas, want 1", deltas)
	}
	if sent := <-got; !strings.Contains(sent, prompt) {
		t.Fatalf("the upstream got %.80s…, not the whole request", sent)
	}
}

// A provider answers with a dozen headers (rate limits, tracing, cookies) that nothing
// reads once the stream has begun: the client keeps the request id it reports and lets
// the rest go, though the response streams for minutes.
func TestAStreamLetsItsResponseHeadersGo(t *testing.T) {
	url, release := pausedUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Request-Id", "req_42")
		w.Header().Set("X-Ratelimit-Padding", strings.Repeat("p", 2048))
	})
	inner := NewTransport()
	t.Cleanup(inner.CloseIdleConnections)
	var padding weak.Pointer[byte]
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := inner.RoundTrip(r)
		if err == nil {
			padding = weak.Make(unsafe.StringData(resp.Header.Get("X-Ratelimit-Padding")))
		}
		return resp, err
	})
	c := New(Config{BaseURL: url, Transport: rt})
	requestID := ""
	for ev, err := range c.Stream(t.Context(), Request{Model: "m"}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == EventCreated {
			requestID = ev.UpstreamRequestID
		}
		if ev.Kind != EventTextDelta {
			continue
		}
		runtime.GC()
		if padding.Value() != nil {
			t.Error("the response's headers are still held while its reply streams")
		}
		release()
	}
	if requestID != "req_42" {
		t.Fatalf("upstream request id = %q, want the response's X-Request-Id", requestID)
	}
}

// pausedUpstream is an upstream whose reply streams its creation and one delta, then waits
// for release (or the request's end) before it completes: a stream held open while a test
// looks at what the client keeps. onRequest sees each request first and may set the
// response's headers.
func pausedUpstream(t *testing.T, onRequest func(http.ResponseWriter, *http.Request)) (url string, release func()) {
	released := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		onRequest(w, r)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"model\":\"m\"}}\n\n"+
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-released:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"model\":\"m\"}}\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, sync.OnceFunc(func() { close(released) })
}

// roundTripFunc is a RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Until the response has begun the transport may send the body again (GetBody, on a fresh
// connection when a kept-alive one was closed under it): each reader reads all of it.
func TestAReplayBodyReadsWholeUntilReleased(t *testing.T) {
	want := strings.Repeat("0123456789", 500)
	r := newReplayBody([]byte(want))
	read := func(rc io.ReadCloser) string {
		t.Helper()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first, err := r.reopen()
	if err != nil || read(first) != want {
		t.Fatalf("reopen = %v; want the whole body", err)
	}
	again, err := r.reopen()
	if err != nil || read(again) != want {
		t.Fatalf("reopen = %v; want the whole body again", err)
	}
	r.release()
	if _, err := r.reopen(); err == nil {
		t.Fatal("reopen after release gave a body")
	}
}

// A request says its length (the upstream gets no chunked upload) and offers the transport
// its body again (GetBody), as http.NewRequest does for a bytes.Reader.
func TestARequestIsSizedAndReplayable(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"model\":\"m\"}}\n\n")
	}))
	t.Cleanup(srv.Close)
	out, err := newPost(context.Background(), srv.URL, "", nil, []byte(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.req.GetBody == nil || out.req.ContentLength != int64(len(`{"model":"m"}`)) {
		t.Fatalf("GetBody %v, ContentLength %d: the transport could not resend it", out.req.GetBody != nil, out.req.ContentLength)
	}
	a, err := openStream(srv.Client().Transport, out)
	body := a.body
	if err != nil {
		t.Fatal(err)
	}
	body.Close()
	if len(bodies) != 1 || bodies[0] != `{"model":"m"}` {
		t.Fatalf("the upstream got %q", bodies)
	}
}
