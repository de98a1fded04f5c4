package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// call makes a JSON request and decodes a JSON answer into out (when non-nil). It returns
// the response with its body already read.
func (s *server) call(ctx context.Context, method, path, token string, body any, out any, headers ...string) *http.Response {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: answer %d is not JSON: %v\n%s", method, path, resp.StatusCode, err, raw)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return resp
}

// sseEvent is one frame as a client parses it.
type sseEvent struct {
	ID    int64 // 0 when the frame had no id
	Name  string
	Data  map[string]any
	Retry int
}

// sseStream reads frames from an open event stream.
type sseStream struct {
	resp *http.Response
	rd   *bufio.Reader
}

// openEvents opens an event stream the way EventSource does: GET with the stream token in
// the query, optionally resuming after lastID.
func (s *server) openEvents(ctx context.Context, url string, lastID int64) *sseStream {
	s.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+url, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("open %s: %v", url, err)
	}
	return &sseStream{resp: resp, rd: newReader(resp.Body)}
}

func newReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }

// postForStream posts text to a session asking for the message's event stream in the
// answer (Accept: text/event-stream), as a client that follows its own message does. It
// returns errors rather than failing the test, for callers on goroutines of their own.
func postForStream(ctx context.Context, base, token, sessionID, text string) (*sseStream, error) {
	body, _ := json.Marshal(map[string]string{"text": text})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/sessions/"+sessionID+"/messages", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", sessionID, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("session %s: status %d", sessionID, resp.StatusCode)
	}
	return &sseStream{resp: resp, rd: newReader(resp.Body)}, nil
}

// next reads the next frame; io.EOF when the server closed the stream.
func (st *sseStream) next() (sseEvent, error) {
	var ev sseEvent
	var data strings.Builder
	seen := false
	for {
		line, err := st.rd.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			if !seen {
				continue
			}
			if data.Len() > 0 {
				if err := json.Unmarshal([]byte(data.String()), &ev.Data); err != nil {
					return ev, err
				}
			}
			return ev, nil
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID, _ = strconv.ParseInt(value, 10, 64)
		case "event":
			ev.Name = value
		case "data":
			data.WriteString(value)
		case "retry":
			ev.Retry, _ = strconv.Atoi(value)
		}
	}
}

func (st *sseStream) close() { st.resp.Body.Close() }

// readAll reads frames until the server closes the stream.
func (st *sseStream) readAll(t testing.TB) []sseEvent {
	t.Helper()
	defer st.close()
	var out []sseEvent
	for {
		ev, err := st.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read event stream after %d frames: %v", len(out), err)
		}
		out = append(out, ev)
	}
}

// reply assembles the reply text the way the contract's client does (docs/api.md):
// deltas in seq order, and on status: retrying the deltas with seq up to
// discard_through_seq dropped.
func reply(evs []sseEvent) string {
	type delta struct {
		seq  float64
		text string
	}
	var ds []delta
	for _, ev := range evs {
		switch {
		case ev.Name == "status" && ev.Data["state"] == "retrying":
			through, ok := ev.Data["discard_through_seq"].(float64)
			kept := ds[:0]
			for _, d := range ds {
				if ok && d.seq > through {
					kept = append(kept, d)
				}
			}
			ds = kept
		case ev.Name == "content_delta":
			ds = append(ds, delta{ev.Data["seq"].(float64), ev.Data["delta"].(string)})
		}
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].seq < ds[j].seq })
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.text)
	}
	return b.String()
}

// plainReply is what a client that knows nothing of retries assembles: every delta, in
// seq order, status events ignored.
func plainReply(evs []sseEvent) string {
	var ds []sseEvent
	for _, ev := range evs {
		if ev.Name == "content_delta" {
			ds = append(ds, ev)
		}
	}
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].Data["seq"].(float64) < ds[j].Data["seq"].(float64) })
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Data["delta"].(string))
	}
	return b.String()
}

// logged returns the frames with an id (everything but retry and heartbeats).
func logged(evs []sseEvent) []sseEvent {
	var out []sseEvent
	for _, ev := range evs {
		if ev.ID > 0 {
			out = append(out, ev)
		}
	}
	return out
}

func readAllString(t testing.TB, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
