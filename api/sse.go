package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// retryMillis is the reconnect delay the first frame asks EventSource to use.
const retryMillis = 2000

// sseWriter writes server-sent events to one connection. Every frame is flushed at once and
// write errors are returned, so a gone client ends its handler instead of being written to.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer
}

// startSSE sends the stream's headers and its first frame. It clears the write deadline so a
// server-wide WriteTimeout cannot cut a long stream, and the read deadline so the body
// timeout cannot either.
func startSSE(w http.ResponseWriter, httpVersionMajor int) (*sseWriter, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	if httpVersionMajor < 2 {
		h.Set("Connection", "keep-alive") // forbidden on HTTP/2 (RFC 9113 §8.2.2)
	}
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.SetWriteDeadline(time.Time{}) // not every writer supports deadlines; fine
	_ = s.rc.SetReadDeadline(time.Time{})  // the body deadline must not end the stream
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(&s.buf, "retry: %d\n\n", retryMillis)
	return s, s.flush()
}

// event buffers one logged event with its id; flush sends it.
func (s *sseWriter) event(ev store.Event) {
	s.buf.WriteString("id: ")
	s.buf.WriteString(strconv.FormatInt(ev.Seq, 10))
	s.buf.WriteString("\nevent: ")
	s.buf.WriteString(ev.Name)
	s.buf.WriteString("\ndata: ")
	s.buf.Write(ev.Data) // compact JSON: one line
	s.buf.WriteString("\n\n")
}

// unlogged writes an event without an id (heartbeats), which leaves the client's
// Last-Event-ID untouched.
func (s *sseWriter) unlogged(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("api: encode %s: %w", name, err)
	}
	fmt.Fprintf(&s.buf, "event: %s\ndata: %s\n\n", name, b)
	return s.flush()
}

// flush sends what is buffered.
func (s *sseWriter) flush() error {
	if s.buf.Len() == 0 {
		return nil
	}
	_, err := s.w.Write(s.buf.Bytes())
	s.buf.Reset()
	if err != nil {
		return fmt.Errorf("api: write event stream: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("api: flush event stream: %w", err)
	}
	return nil
}
