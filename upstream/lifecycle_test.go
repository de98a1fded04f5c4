package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// stallingServer sends response.created and one delta, then holds the stream open until the
// client goes away, which it reports by closing the returned channel.
func stallingServer(t *testing.T) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_s\"}}\n\n"+
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n")
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	t.Cleanup(srv.Close)
	return srv, gone
}

// waitGone fails the test unless the server saw the client leave within a few seconds.
func waitGone(t *testing.T, gone <-chan struct{}) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

func TestStreamStops(t *testing.T) {
	tests := []struct {
		name string
		// run iterates the stream and returns the error it ended with.
		run     func(ctx context.Context, cancel context.CancelFunc, c *Client) error
		wantErr error
	}{
		{
			name: "consumer break closes the body",
			run: func(ctx context.Context, _ context.CancelFunc, c *Client) error {
				for ev, err := range c.Stream(ctx, Request{}) {
					if err != nil {
						return err
					}
					if ev.Kind == EventTextDelta {
						break
					}
				}
				return nil
			},
		},
		{
			name: "ctx cancelled mid-stream yields ctx error once",
			run: func(ctx context.Context, cancel context.CancelFunc, c *Client) error {
				var errs []error
				for ev, err := range c.Stream(ctx, Request{}) {
					if err != nil {
						errs = append(errs, err)
					}
					if ev.Kind == EventTextDelta {
						cancel()
					}
				}
				if len(errs) != 1 {
					return fmt.Errorf("got %d errors %v, want exactly one", len(errs), errs)
				}
				return errs[0]
			},
			wantErr: context.Canceled,
		},
		{
			name: "ctx deadline during a stall",
			run: func(ctx context.Context, _ context.CancelFunc, c *Client) error {
				ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
				_, err := collectQuiet(c.Stream(ctx, Request{}))
				return err
			},
			wantErr: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, gone := stallingServer(t)
			c := newTestClient(t, srv)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			err := tt.run(ctx, cancel, c)
			// The ctx error itself, not wrapped, so callers can compare it.
			if err != tt.wantErr {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			waitGone(t, gone)
		})
	}
}

// collectQuiet drains a stream without a testing.T.
func collectQuiet(seq func(func(Event, error) bool)) ([]Event, error) {
	var events []Event
	for ev, err := range seq {
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
	return events, nil
}

func TestStreamLargeEvent(t *testing.T) {
	big := strings.Repeat("x", 2<<20) // 32 times bufio.Scanner's default limit
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":%q}\n\n", big)
		fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_big\"}}\n\n")
	}))
	t.Cleanup(srv.Close)
	events, err := collect(t, newTestClient(t, srv).Stream(t.Context(), Request{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Delta != big || events[1].ResponseID != "resp_big" {
		t.Fatalf("got %d events, first delta %d bytes", len(events), len(events[0].Delta))
	}
}

func TestStreamAbruptClose(t *testing.T) {
	// The handler aborts mid-stream: the chunked body ends without its terminator.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\nevent: response.completed\ndata: {\"type\":\"resp")
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}))
	t.Cleanup(srv.Close)
	events, err := collect(t, newTestClient(t, srv).Stream(t.Context(), Request{}))
	if len(events) != 1 || events[0].Delta != "a" {
		t.Errorf("events = %+v, want the one delta", events)
	}
	if !errors.Is(err, ErrProvider) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want provider_error wrapping io.ErrUnexpectedEOF", err)
	}
}
