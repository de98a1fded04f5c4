package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/api"
	"github.com/phaseflow/phaseflow/api/auth"
)

// sseEvent is one event as a client parses it.
type sseEvent struct {
	id   int64 // 0 for none (heartbeats)
	name string
	data string
}

// readEvents parses an event stream to its end and returns its events and the error that
// ended the read (nil at a clean end of the response).
func readEvents(r io.Reader) ([]sseEvent, error) {
	br := bufio.NewReader(r)
	var out []sseEvent
	var ev sseEvent
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" {
				return out, nil
			}
			return out, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.name != "" {
				out = append(out, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
}

// checkLog checks that evs are a message's whole log from position 1, as a client
// following it must see it: ids 1, 2, 3 … without a gap (heartbeats have none), each
// heartbeat's last_event_id the id before it, and a terminal event last. It returns the
// message id and the number of heartbeats.
func checkLog(t *testing.T, evs []sseEvent) (string, int) {
	t.Helper()
	var last int64
	var beats int
	var msgID string
	for _, ev := range evs {
		var data struct {
			MessageID   string `json:"message_id"`
			LastEventID int64  `json:"last_event_id"`
		}
		if err := json.Unmarshal([]byte(ev.data), &data); err != nil {
			t.Fatalf("event %s: data %q: %v", ev.name, ev.data, err)
		}
		msgID = data.MessageID
		if ev.name == "heartbeat" {
			beats++
			if ev.id != 0 || data.LastEventID != last {
				t.Fatalf("heartbeat with id %d and last_event_id %d after event %d", ev.id, data.LastEventID, last)
			}
			continue
		}
		if ev.id != last+1 {
			t.Fatalf("event %s has id %d after %d", ev.name, ev.id, last)
		}
		last = ev.id
	}
	if n := len(evs); n == 0 || (evs[n-1].name != "completed" && evs[n-1].name != "error") {
		t.Fatalf("the stream did not end with its terminal event: %v", evs)
	}
	return msgID, beats
}

// streamTurn posts text as a message and asks for its event stream, through client.
func (s *stack) streamTurn(t *testing.T, client *http.Client, base, text string, trace *httptrace.ClientTrace) *http.Response {
	t.Helper()
	tok, _ := s.auth.Sign("u1", auth.RoleUser, time.Hour)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a stream that never ends fails the test
	t.Cleanup(cancel)
	if trace != nil {
		ctx = httptrace.WithClientTrace(ctx, trace)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/messages", strings.NewReader(`{"text":"`+text+`"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	return resp
}

// TestDetachedStreamGivesItsConnectionBack streams turns on a keep-alive connection: each
// stream is whole and well framed, and the client's next request goes out on the same
// connection, as it would through a handler that kept the stream.
func TestDetachedStreamGivesItsConnectionBack(t *testing.T) {
	s := newStack(t)
	defer s.close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	var conns []httptrace.GotConnInfo
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conns = append(conns, i) }}
	for i := range 3 {
		resp := s.streamTurn(t, client, s.srv.URL, "hello "+strconv.Itoa(i), trace)
		evs, err := readEvents(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("turn %d: the stream broke off: %v", i, err)
		}
		checkLog(t, evs)
	}
	for i, c := range conns {
		if c.Conn.LocalAddr().String() != conns[0].Conn.LocalAddr().String() || c.Reused != (i > 0) {
			t.Fatalf("turn %d went out on %s (reused %t); want the first turn's connection, %s, reused by each later turn",
				i, c.Conn.LocalAddr(), c.Reused, conns[0].Conn.LocalAddr())
		}
	}
}

// TestDetachedStreamBeats follows a slow turn: heartbeats go on between its events, each
// with the position before it, and the log arrives whole.
func TestDetachedStreamBeats(t *testing.T) {
	s := newStack(t)
	defer s.close()
	resp := s.streamTurn(t, http.DefaultClient, s.srv.URL, "slow [[scenario:default]] [[pace_ms:120]]", nil)
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if _, beats := checkLog(t, evs); beats < 10 {
		t.Fatalf("%d heartbeats in a turn of several seconds with a 50 ms interval", beats)
	}
}

// TestDetachedStreamOverHTTP10 follows a live message as an HTTP/1.0 client: no chunked
// framing (which HTTP/1.0 does not know), the whole log, and the connection closed at its
// end, which is how such a response ends.
func TestDetachedStreamOverHTTP10(t *testing.T) {
	s := newStack(t)
	defer s.close()
	_, _, _, id := postTurn(t, s, "slow [[pace_ms:20]]")
	tok, _ := s.auth.Sign("u1", auth.RoleUser, time.Hour)
	conn, err := net.Dial("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "GET /api/v1/messages/%s/events HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n", id, tok)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) != 0 || !resp.Close {
		t.Fatalf("answer %d, transfer encoding %v, close %t: want 200, none, close", resp.StatusCode, resp.TransferEncoding, resp.Close)
	}
	evs, err := readEvents(resp.Body) // to the server's close
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := checkLog(t, evs); got != id {
		t.Fatalf("events of message %s, want %s", got, id)
	}
}

// TestDetachedStreamNoticesAClientThatLeft closes a client's connection mid-turn: nothing
// reads a detached connection, so the stream learns of it at its next write, a heartbeat at
// the latest, long before the turn ends.
func TestDetachedStreamNoticesAClientThatLeft(t *testing.T) {
	s := newStack(t)
	defer s.shutdown(100 * time.Millisecond) // the turn has a minute to go
	resp := s.streamTurn(t, http.DefaultClient, s.srv.URL, "very slow [[scenario:default]] [[pace_ms:4000]]", nil)
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "event: content_delta") {
			break
		}
	}
	resp.Body.Close()
	deadline := time.Now().Add(2 * time.Second) // the next delta is 4 s away
	for openStreams(t, s) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream of a client that left is still open 2 s later (heartbeats every 50 ms)")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openStreams reads phaseflow_event_streams_open from GET /metrics.
func openStreams(t *testing.T, s *stack) int {
	t.Helper()
	resp := s.do(t, http.MethodGet, "/metrics", "")
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "phaseflow_event_streams_open "); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return int(n)
		}
	}
	t.Fatal("no phaseflow_event_streams_open in /metrics")
	return 0
}

// TestDetachedStreamAtShutdown shuts the server down mid-turn: the turn ends interrupted
// after the grace, and its detached stream delivers that terminal event and ends the
// response cleanly.
func TestDetachedStreamAtShutdown(t *testing.T) {
	s := newStack(t)
	defer s.close()
	resp := s.streamTurn(t, http.DefaultClient, s.srv.URL, "slow [[pace_ms:300]]", nil)
	defer resp.Body.Close()
	type read struct {
		evs []sseEvent
		err error
	}
	got := make(chan read, 1)
	go func() {
		evs, err := readEvents(resp.Body)
		got <- read{evs, err}
	}()
	time.Sleep(500 * time.Millisecond)
	s.shutdown(100 * time.Millisecond)
	select {
	case <-time.After(5 * time.Second):
		t.Fatal("the detached stream had not ended 5 s after shutdown")
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the stream broke off instead of ending: %v", r.err)
		}
		checkLog(t, r.evs)
		if last := r.evs[len(r.evs)-1]; last.name != "error" || !strings.Contains(last.data, `"code":"interrupted"`) {
			t.Fatalf("last event %s %s, want error interrupted", last.name, last.data)
		}
	}
}

// TestStreamOverHTTP2StaysInItsHandler streams a turn over HTTP/2, whose connections cannot
// be taken over: the stream is served from its handler, whole.
func TestStreamOverHTTP2StaysInItsHandler(t *testing.T) {
	s := newStack(t)
	defer s.close()
	h2 := httptest.NewUnstartedServer(s.api.Handler())
	h2.EnableHTTP2 = true
	h2.StartTLS()
	defer h2.Close()
	client := h2.Client()
	client.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"h2"}
	resp := s.streamTurn(t, client, h2.URL, "hello over h2", nil)
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "h2" {
		t.Fatalf("protocol %s: the test needs HTTP/2", resp.Proto)
	}
	if resp.Header.Get("Connection") != "" {
		t.Fatalf("Connection header %q on HTTP/2", resp.Header.Get("Connection"))
	}
	evs, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	checkLog(t, evs)
}

// A detached stream's flush, chunk framing included, allocates nothing: one goes out for
// every batch of events a stream delivers.
func TestDetachedFlushAllocatesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := api.FlushDetached(conn)
	frames := []byte("id: 1\nevent: content_delta\ndata: {}\n\n")
	if allocs := testing.AllocsPerRun(100, func() {
		if err := send(frames); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("a flush allocates %v times, want 0", allocs)
	}
}
