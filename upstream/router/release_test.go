package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/phaseflow/phaseflow/upstream"
)

// A reply streams for minutes; its prompt (instructions, the conversation) is kilobytes. Once
// an endpoint has answered, neither the router nor the client may keep the request: the
// first endpoint here fails, so the router still needs it for the second, and after the
// second's first delta it must be gone.
func TestACommittedStreamLetsItsRequestGo(t *testing.T) {
	release := make(chan struct{})
	bodies := make(chan string, 1)
	down := failing(t, http.StatusServiceUnavailable, "")
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bodies <- string(body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, createdEv+deltaEv, 2, 2)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprintf(w, completedEv, 2, 2)
	}))
	t.Cleanup(slow.Close)
	r := newRouter(t, Options{}, ep(t, 1, 1, down.URL), ep(t, 2, 2, slow.URL))

	seq, input := streamHeld(t.Context(), r, "the prompt of a long conversation")
	deltas := 0
	for ev, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != upstream.EventTextDelta {
			continue
		}
		deltas++
		runtime.GC()
		if input.Value() != nil {
			t.Error("the request is still held while the committed stream goes on")
		}
		close(release)
	}
	if deltas != 1 || down.requests() != 1 {
		t.Fatalf("%d deltas, %d requests to the failing endpoint; want 1 and 1", deltas, down.requests())
	}
	if body := <-bodies; !strings.Contains(body, "the prompt of a long conversation") {
		t.Fatalf("the second endpoint got %s, not the request", body)
	}
}

// streamHeld starts a stream of a request whose conversation only the stream can reach,
// and returns a weak pointer to it.
func streamHeld(ctx context.Context, r *Router, text string) (func(func(upstream.Event, error) bool), weak.Pointer[upstream.InputItem]) {
	input := []upstream.InputItem{{Role: "user", Content: text}}
	return r.Stream(ctx, upstream.Request{Instructions: "be brief", Input: input}), weak.Make(&input[0])
}

// The router lets the request go once committed, so its sequence is single-use: a second
// iteration says so instead of sending an empty request.
func TestARouterStreamIsIteratedOnce(t *testing.T) {
	r := newRouter(t, Options{}, ep(t, 1, 1, healthy(t, 1).URL))
	seq := r.Stream(t.Context(), upstream.Request{})
	if _, err := drain(seq); err != nil {
		t.Fatal(err)
	}
	if _, err := drain(seq); !errors.Is(err, ErrReused) {
		t.Fatalf("second iteration: err = %v, want ErrReused", err)
	}
}
