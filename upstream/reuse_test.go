package upstream

import (
	"context"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A completed Responses stream, as an upstream flushes it: its last bytes, the chunked
// body's end, go out in a write of their own once the handler returns.
const completedStream = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_r\"}}\n\n" +
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n" +
	"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_r\"}}\n\n"

// A completed Chat Completions stream: a chunk with its finish reason, then [DONE].
const completedChat = "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n" +
	"data: [DONE]\n\n"

// countingServer serves body, flushed, then runs after (nil: nothing) before the handler
// returns; it counts the connections it accepted.
func countingServer(t *testing.T, body string, after func(r *http.Request)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
		_ = http.NewResponseController(w).Flush()
		if after != nil {
			after(r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// streamer is what both wires' clients do.
type streamer interface {
	Stream(ctx context.Context, req Request) iter.Seq2[Event, error]
}

func TestCompletedStreamsReuseTheConnection(t *testing.T) {
	released := make(chan struct{})
	tests := []struct {
		name string
		// after runs in the handler once the completed event is flushed.
		after func(r *http.Request)
		// wantConns is the connections three streams in a row take.
		wantConns int32
	}{
		{
			name: "the body's end follows the terminal event",
			// A moment later, as over a network: the client has read the terminal event by
			// then, and must wait for the end to keep the connection.
			after:     func(*http.Request) { time.Sleep(time.Millisecond) },
			wantConns: 1,
		},
		{
			name: "an upstream that holds the stream open after it",
			// Each handler waits here until its client goes away: the client must not wait
			// for the end of the body; it gives the connection up instead.
			after: func(r *http.Request) {
				select {
				case <-released:
				case <-r.Context().Done():
				}
			},
			wantConns: 3,
		},
	}
	wires := []struct {
		name string
		body string
		// client opens a client of the wire on srv, one transport for all its streams.
		client func(t *testing.T, srv *httptest.Server) streamer
	}{
		{name: "responses", body: completedStream, client: func(t *testing.T, srv *httptest.Server) streamer {
			return newTestClient(t, srv)
		}},
		{name: "chat completions", body: completedChat, client: func(t *testing.T, srv *httptest.Server) streamer {
			return newTestChat(t, srv, nil, 0)
		}},
	}
	req := Request{Input: []InputItem{{Role: "user", Content: "hi"}}}
	for _, wire := range wires {
		for _, tt := range tests {
			t.Run(wire.name+"/"+tt.name, func(t *testing.T) {
				srv, conns := countingServer(t, wire.body, tt.after)
				c := wire.client(t, srv)
				for range 3 {
					events, err := collect(t, c.Stream(context.Background(), req))
					if err != nil {
						t.Fatal(err)
					}
					if got := events[len(events)-1].Kind; got != EventCompleted {
						t.Fatalf("last event %v, want completed", got)
					}
				}
				if got := conns.Load(); got != tt.wantConns {
					t.Errorf("three completed streams took %d connections, want %d", got, tt.wantConns)
				}
			})
		}
	}
	close(released)
}
