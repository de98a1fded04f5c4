package api

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// An event stream is detached from its handler once its headers and first frame are out:
// the handler takes the connection from net/http (Hijack) and returns, and the stream
// writes the rest on the bare connection, on a goroutine it has only while it has
// something to write (waiting.go). A handler holds what net/http gives every request for
// as long as it runs: its goroutine, whose stack grew through echo's middleware, the auth
// and the database, a second goroutine reading the connection in the background, and
// its buffers. A detached stream holds the connection, its cursor and a place in a wheel: it is
// the server's cheapest way to keep a client waiting, and streams mostly wait. Measured
// with loadbench, a stream kept on its handler more than doubled the memory a follower
// costs and took the memory of a generation past its bound.
//
// When the stream ends, its writer finishes the HTTP response and gives the connection back
// to the server through its [Server.Listener], so a keep-alive client's next request goes
// where it would have gone. A client that leaves is noticed at the next write (a heartbeat
// at the latest), since nothing reads a detached connection. HTTP/2 connections cannot be
// taken over; their streams stay in their handlers.

// detachedWriteTimeout bounds each write of a detached stream: a client that reads nothing
// for this long is cut off (it reconnects with its Last-Event-ID and misses nothing), and
// shutdown waits no longer than this for a detached stream's last frames.
const detachedWriteTimeout = 10 * time.Second

// detach hands es the bare connection and reports whether it did; it fails only when the
// connection cannot be taken over (HTTP/2, or a writer that is not net/http's). What the
// log has now is delivered before it returns.
func (s *Server) detach(c echo.Context, es *eventStream) bool {
	conn, brw, err := http.NewResponseController(c.Response()).Hijack()
	if err != nil {
		return false
	}
	req := c.Request()
	sink := newConnSink(conn, req.ProtoAtLeast(1, 1), &s.frames)
	// The connection may serve the client's next request unless the client asked to close
	// it, its response ends with the connection (HTTP/1.0), or the client already sent
	// bytes the hijack took (pipelining): those would be lost.
	reusable := sink.chunked && !req.Close && brw.Reader.Buffered() == 0
	es.w.out = sink
	es.end = func(out waitOutcome) {
		if out == streamGone || !sink.finish() || !reusable || s.listener == nil {
			_ = conn.Close()
			return
		}
		s.listener.giveBack(conn)
	}
	es.startDetached()
	return true
}

// endDetached waits for the detached streams to end after EndStreams told them to. Each
// delivers what the log committed before the end, within detachedWriteTimeout per write; a
// read still waiting on the database past that bound is cancelled.
func (s *Server) endDetached() {
	done := make(chan struct{})
	go func() {
		s.detached.Wait()
		close(done)
	}()
	t := time.NewTimer(detachedWriteTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.cancelDetached()
		<-done
	}
	s.cancelDetached()
}

// connSink writes a detached stream's frames on its connection in the framing its response
// began with: HTTP/1.1 chunks, or the bare bytes of an HTTP/1.0 answer, which ends when the
// connection closes.
//
// A chunk is built whole in a buffer borrowed for the write and goes out in one system
// call. A vectored write of its three parts would copy nothing, but the sink would keep its
// list of parts and the connection a list of its own: more than the sink itself, for every
// follower, to spare a copy of some hundred bytes per write.
type connSink struct {
	conn    net.Conn
	bufs    *frameBuffers
	chunked bool
	ended   bool // the response's last chunk is out
}

// Chunk framing: the end of a chunk, and of the chunk and the response at once.
const (
	chunkEnd    = "\r\n"
	responseEnd = chunkEnd + "0" + chunkEnd + chunkEnd
)

// newConnSink returns the sink of a detached stream on conn.
func newConnSink(conn net.Conn, chunked bool, bufs *frameBuffers) *connSink {
	return &connSink{conn: conn, bufs: bufs, chunked: chunked}
}

// send writes frames as one chunk, in one system call, within detachedWriteTimeout; the
// last one carries the response's end too.
func (cs *connSink) send(frames []byte, last bool) error {
	if err := cs.conn.SetWriteDeadline(time.Now().Add(detachedWriteTimeout)); err != nil {
		return fmt.Errorf("api: detached event stream: %w", err)
	}
	out := frames
	if cs.chunked {
		b := cs.bufs.get()
		defer cs.bufs.put(b)
		b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(len(frames)), 16))
		b.WriteString(chunkEnd)
		b.Write(frames)
		if last {
			b.WriteString(responseEnd)
		} else {
			b.WriteString(chunkEnd)
		}
		out = b.Bytes()
	}
	if _, err := cs.conn.Write(out); err != nil {
		return fmt.Errorf("api: write detached event stream: %w", err)
	}
	cs.ended = cs.chunked && last
	// A deadline left armed would fire for nothing once per write: for an idle follower,
	// once per heartbeat.
	if err := cs.conn.SetWriteDeadline(time.Time{}); err != nil {
		return fmt.Errorf("api: detached event stream: %w", err)
	}
	return nil
}

// finish ends the HTTP response (its last chunk, unless the last frames carried it) and
// clears the connection's deadlines for whoever serves it next; false means the connection
// is of no further use.
func (cs *connSink) finish() bool {
	if !cs.chunked {
		return false
	}
	if !cs.ended {
		if cs.conn.SetWriteDeadline(time.Now().Add(detachedWriteTimeout)) != nil {
			return false
		}
		if _, err := io.WriteString(cs.conn, responseEnd[len(chunkEnd):]); err != nil {
			return false
		}
	}
	return cs.conn.SetDeadline(time.Time{}) == nil
}
