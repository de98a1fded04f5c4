package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// retryMillis is the reconnect delay the first frame asks EventSource to use.
const retryMillis = 2000

// sseWriter writes server-sent events to one connection. Every frame is flushed at once and
// write errors are returned, so a gone client ends its stream instead of being written to.
// The buffer the frames are built in is borrowed from bufs for one flush at a time (see
// frameBuffers), so a stream waiting for its next event holds none.
type sseWriter struct {
	out   frameSink
	bufs  *frameBuffers
	buf   *bytes.Buffer // nil between flushes
	retry bool          // the next frame is the stream's first: it carries retry:
	proto Protocol      // the client's protocol; nil: Phaseflow's own events
}

// Protocol translates a message's events into the frames of a client's protocol (package
// protocols: the AI SDK's UI message stream, AG-UI), in place of Phaseflow's own events.
type Protocol interface {
	// Append appends what ev becomes, as whole server-sent events; a terminal event's
	// frames end the protocol's stream.
	Append(dst []byte, ev store.Event) []byte
	// Heartbeat appends what keeps an idle connection open.
	Heartbeat(dst []byte) []byte
}

// frameSink is where an event stream's flushed frames go: the handler's response writer, or
// the bare connection of a detached stream (connSink).
type frameSink interface {
	// send writes whole frames and makes sure they leave at once; last says the stream ends
	// with them, so a sink that frames the response itself may end it in the same write.
	send(frames []byte, last bool) error
}

// responseSink sends frames through the handler's http.ResponseWriter.
type responseSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (r responseSink) send(frames []byte, _ bool) error {
	if _, err := r.w.Write(frames); err != nil {
		return fmt.Errorf("api: write event stream: %w", err)
	}
	if err := r.rc.Flush(); err != nil {
		return fmt.Errorf("api: flush event stream: %w", err)
	}
	return nil
}

// startSSE sends the stream's headers; its first frame, whichever it is, carries the
// reconnect delay (retry:) in its own block, since a block holding only retry: reads as an
// empty message to some clients (docs/api.md). It clears the write deadline so a
// server-wide WriteTimeout cannot cut a long stream, and the read deadline so the body
// timeout cannot either.
func startSSE(w http.ResponseWriter, httpVersionMajor int, bufs *frameBuffers) (*sseWriter, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	if httpVersionMajor < 2 {
		h.Set("Connection", "keep-alive") // forbidden on HTTP/2 (RFC 9113 §8.2.2)
	}
	rc := http.NewResponseController(w)
	s := &sseWriter{out: responseSink{w: w, rc: rc}, bufs: bufs}
	_ = rc.SetWriteDeadline(time.Time{}) // not every writer supports deadlines; fine
	_ = rc.SetReadDeadline(time.Time{})  // the body deadline must not end the stream
	w.WriteHeader(http.StatusOK)
	s.retry = true
	if err := rc.Flush(); err != nil {
		return nil, fmt.Errorf("api: flush event stream headers: %w", err)
	}
	return s, nil
}

// block starts a frame in the buffer: the first frame of the stream begins with retry:.
func (s *sseWriter) block() *bytes.Buffer {
	b := s.buffer()
	if s.retry {
		s.retry = false
		fmt.Fprintf(b, "retry: %d\n", retryMillis)
	}
	return b
}

// buffer is the buffer of the frames to send at the next flush, borrowed if need be.
func (s *sseWriter) buffer() *bytes.Buffer {
	if s.buf == nil {
		s.buf = s.bufs.get()
	}
	return s.buf
}

// event buffers one logged event; flush sends it. Its id comes last, so that a client that
// records the id as soon as it reads the line (some fetch-based clients do) cannot record
// it for an event a cut connection never completed (docs/api.md).
func (s *sseWriter) event(ev store.Event) {
	if s.proto != nil {
		b := s.buffer()
		b.Write(s.proto.Append(b.AvailableBuffer(), ev))
		return
	}
	b := s.block()
	b.WriteString("event: ")
	b.WriteString(ev.Name)
	b.WriteString("\ndata: ")
	b.Write(ev.Data) // compact JSON: one line
	b.WriteString("\nid: ")
	b.Write(strconv.AppendInt(b.AvailableBuffer(), ev.Seq, 10))
	b.WriteString("\n\n")
}

// heartbeat writes a heartbeat, which has no id and leaves the client's Last-Event-ID
// untouched; its payload is appended without reflection (events.AppendHeartbeat).
func (s *sseWriter) heartbeat(hb events.HeartbeatData) error {
	if s.proto != nil {
		b := s.buffer()
		b.Write(s.proto.Heartbeat(b.AvailableBuffer()))
		return s.flush(false)
	}
	b := s.block()
	b.WriteString("event: " + events.Heartbeat + "\ndata: ")
	b.Write(events.AppendHeartbeat(b.AvailableBuffer(), hb))
	b.WriteString("\n\n")
	return s.flush(false)
}

// unlogged writes an event without an id (a skill job's heartbeats), which leaves the
// client's Last-Event-ID untouched.
func (s *sseWriter) unlogged(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("api: encode %s: %w", name, err)
	}
	fmt.Fprintf(s.block(), "event: %s\ndata: %s\n\n", name, b)
	return s.flush(false)
}

// flush sends what is buffered; last says the stream ends with it. Nothing buffered sends
// nothing (a protocol may make nothing of an event): an empty chunk would end an HTTP/1.1
// response, and the end is the sink's to write.
func (s *sseWriter) flush(last bool) error {
	if s.buf == nil {
		return nil
	}
	if s.buf.Len() == 0 {
		s.bufs.put(s.buf)
		s.buf = nil
		return nil
	}
	err := s.out.send(s.buf.Bytes(), last)
	s.bufs.put(s.buf)
	s.buf = nil
	return err
}

// frameBuffers lends event streams the buffer they build frames in, for one flush at a
// time. A stream that owned its buffer grew it anew, from 64 bytes to the size of its
// largest batch (the terminal event carries the turn's metadata), and kept it while it
// waited: a large share of every turn's allocations. A buffer grown past
// maxFrameBuffer (a batch of many events after a reconnect) is left to the collector rather
// than kept for every stream after it. The zero value is ready; nil lends a new buffer each
// time.
type frameBuffers struct{ pool sync.Pool }

// maxFrameBuffer is the largest buffer frameBuffers keeps.
const maxFrameBuffer = 64 << 10

// get lends an empty buffer.
func (p *frameBuffers) get() *bytes.Buffer {
	if p != nil {
		if b, ok := p.pool.Get().(*bytes.Buffer); ok {
			return b
		}
	}
	return new(bytes.Buffer)
}

// put takes b back once its bytes are written.
func (p *frameBuffers) put(b *bytes.Buffer) {
	if p == nil || b.Cap() > maxFrameBuffer {
		return
	}
	b.Reset()
	p.pool.Put(b)
}
