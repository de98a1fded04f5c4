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
// the handler takes the connection from net/http (Hijack) and returns, and one goroutine of
// the stream's own writes the rest on the bare connection. A handler holds what net/http
// gives every request for as long as it runs: its goroutine, whose stack grew through
// echo's middleware, the auth and the database, a second goroutine reading the connection
// in the background, and 10 KiB of buffers. A detached stream holds one goroutine that
// starts shallow, the connection and its cursor: it is the server's cheapest way to keep a
// client waiting, and streams mostly wait (for the model's next token, a tool call, the
// next event of a message another device follows).
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

// detach hands es to a writer of its own on the bare connection and reports whether it
// did; it fails only when the connection cannot be taken over (HTTP/2, or a writer that is
// not net/http's).
func (s *Server) detach(c echo.Context, es *eventStream) bool {
	conn, brw, err := http.NewResponseController(c.Response()).Hijack()
	if err != nil {
		return false
	}
	req := c.Request()
	sink := &connSink{conn: conn, chunked: req.ProtoAtLeast(1, 1)}
	// The connection may serve the client's next request unless the client asked to close
	// it, its response ends with the connection (HTTP/1.0), or the client already sent
	// bytes the hijack took (pipelining): those would be lost.
	reusable := sink.chunked && !req.Close && brw.Reader.Buffered() == 0
	es.w.out = sink
	s.detached.Go(func() {
		out := es.pump(s.detachedCtx)
		es.close()
		if out == streamGone || !sink.finish() || !reusable || s.listener == nil {
			_ = conn.Close()
			return
		}
		s.listener.giveBack(conn)
	})
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
type connSink struct {
	conn    net.Conn
	chunked bool
	ended   bool     // the response's last chunk is out
	head    [18]byte // a chunk's size line
}

// Chunk framing: the end of a chunk, and of the chunk and the response at once.
const (
	chunkEnd    = "\r\n"
	responseEnd = "\r\n0\r\n\r\n"
)

// send writes frames as one chunk, in one system call, within detachedWriteTimeout; the
// last one carries the response's end too.
func (cs *connSink) send(frames []byte, last bool) error {
	if err := cs.conn.SetWriteDeadline(time.Now().Add(detachedWriteTimeout)); err != nil {
		return fmt.Errorf("api: detached event stream: %w", err)
	}
	var err error
	if cs.chunked {
		head := append(strconv.AppendInt(cs.head[:0], int64(len(frames)), 16), '\r', '\n')
		tail := chunkEnd
		if last {
			tail = responseEnd
		}
		bufs := net.Buffers{head, frames, []byte(tail)}
		_, err = bufs.WriteTo(cs.conn)
		cs.ended = last && err == nil
	} else {
		_, err = cs.conn.Write(frames)
	}
	if err != nil {
		return fmt.Errorf("api: write detached event stream: %w", err)
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
		if _, err := io.WriteString(cs.conn, "0"+chunkEnd+chunkEnd); err != nil {
			return false
		}
	}
	return cs.conn.SetDeadline(time.Time{}) == nil
}
