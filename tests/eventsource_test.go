package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/r3labs/sse/v2"
	"gopkg.in/cenkalti/backoff.v1"
)

// cuttingProxy forwards TCP to target but cuts the first connection after limit bytes of
// answer, the way a flaky mobile network or an impatient proxy drops a stream.
type cuttingProxy struct {
	ln     net.Listener
	target string
	limit  int64
	conns  atomic.Int32
	wg     sync.WaitGroup
}

func newCuttingProxy(t *testing.T, target string, limit int64) *cuttingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttingProxy{ln: ln, target: target, limit: limit}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *cuttingProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		first := p.conns.Add(1) == 1
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.pipe(c, first) }()
	}
}

func (p *cuttingProxy) pipe(client net.Conn, cut bool) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() { _, _ = io.Copy(server, client); server.Close() }() // the client left: so does the server side
	if cut {
		_, _ = io.CopyN(client, server, p.limit)
		return
	}
	_, _ = io.Copy(client, server)
}

// wholeEvents passes an event stream on only up to its last complete event (blank line).
// r3labs/sse dispatches a half-received event at EOF as if it were whole and moves its
// Last-Event-ID past it, losing that event on reconnect; EventSource discards it.
type wholeEvents struct {
	rc      io.ReadCloser
	pending []byte // read but not yet known to be part of a complete event
	ready   []byte // complete events not yet returned
	eof     bool
}

func (w *wholeEvents) Read(p []byte) (int, error) {
	for len(w.ready) == 0 {
		if w.eof {
			return 0, io.EOF // drops an incomplete trailing event
		}
		buf := make([]byte, 4096)
		n, err := w.rc.Read(buf)
		w.pending = append(w.pending, buf[:n]...)
		if i := bytes.LastIndex(w.pending, []byte("\n\n")); i >= 0 {
			w.ready = append(w.ready, w.pending[:i+2]...)
			w.pending = append([]byte(nil), w.pending[i+2:]...)
		}
		if err != nil {
			w.eof = true
		}
	}
	n := copy(p, w.ready)
	w.ready = w.ready[n:]
	return n, nil
}

func (w *wholeEvents) Close() error { return w.rc.Close() }

// TestEventSourceClientResumesThroughADroppedConnection follows a turn with r3labs/sse's
// client, a standard SSE client that reconnects with Last-Event-ID on its own, through a
// proxy that drops the first connection mid-stream. The client must assemble exactly the
// persisted reply, and the server's 204 after the terminal event must stop its reconnects.
func TestEventSourceClientResumesThroughADroppedConnection(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("ivy")
		sid := s.newSession(tok, "en")
		a := s.post(tok, sid, "through a bad network [[pace_ms:20]]")
		proxy := newCuttingProxy(t, strings.TrimPrefix(s.base, "http://"), 2500)

		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		client := sse.NewClient("http://" + proxy.ln.Addr().String() + a.eventsURL())
		// The library retries forever by default, ignores ctx between attempts and treats 204
		// as a retryable failure (docs/dependencies.md); a real EventSource stops on 204.
		client.ReconnectStrategy = backoff.WithContext(backoff.NewConstantBackOff(50*time.Millisecond), ctx)
		client.ResponseValidator = func(_ *sse.Client, resp *http.Response) error {
			if resp.StatusCode == http.StatusOK {
				resp.Body = &wholeEvents{rc: resp.Body}
				return nil
			}
			resp.Body.Close()
			return backoff.Permanent(fmt.Errorf("status %d", resp.StatusCode))
		}

		var ids []int64
		var text strings.Builder
		var terminal string
		handle := func(ev *sse.Event) {
			name := string(ev.Event)
			if name == "heartbeat" || name == "" {
				return
			}
			id, _ := strconv.ParseInt(string(ev.ID), 10, 64)
			ids = append(ids, id)
			var d struct{ Delta, State string }
			_ = json.Unmarshal(ev.Data, &d)
			switch {
			case name == "content_delta":
				text.WriteString(d.Delta)
			case name == "status" && d.State == "retrying":
				text.Reset()
			case name == "completed" || name == "error":
				terminal = name
			}
		}
		// The library ends a subscription without error when the server closes the stream,
		// where EventSource reconnects; so reconnect the way EventSource does, keeping the
		// client (and with it the Last-Event-ID it sends) until the server says 204.
		var err error
		for attempt := 0; attempt < 10 && err == nil; attempt++ {
			err = client.SubscribeRawWithContext(ctx, handle)
		}
		client.Connection.CloseIdleConnections() // lets the proxy's pipes end
		if err == nil || !strings.Contains(err.Error(), "204") {
			t.Fatalf("subscription ended with %v, want the permanent 204 after the terminal event", err)
		}
		if proxy.conns.Load() < 2 {
			t.Fatalf("%d connections; the first should have been cut and the stream resumed on another", proxy.conns.Load())
		}
		for i, id := range ids {
			if id != int64(i+1) {
				t.Fatalf("event %d has id %d across the reconnect, want %d (gap or duplicate)", i, id, i+1)
			}
		}
		msg := waitFinished(t, s, tok, a.MessageID)
		if terminal != "completed" || msg["content"] != text.String() {
			t.Fatalf("assembled %q (terminal %q), persisted %q", text.String(), terminal, msg["content"])
		}
	})
}
