//go:build unix

package upstream

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// readAheadConn is an upstream connection that reads a burst in one system call while
// keeping nothing while it waits.
//
// The transport reads a response through a 1 KiB buffer (NewTransport says why it is
// small), one system call a kilobyte: a fast upstream's reply took dozens of reads, a
// visible share of a replica's CPU on machines whose system calls are dear, and measured
// with loadbench the read-ahead saves SQLite's replica more than a tenth of its CPU per
// turn (docs/performance.md). A read that fills the caller's buffer says more is waiting, so the
// connection then reads once more, without waiting, into a buffer from a pool, and serves
// the next reads from it; the buffer goes back to the pool as soon as it is read out.
// A read that does not fill the caller's buffer (a paced model's frame of a few hundred
// bytes) reads nothing ahead, so a connection waiting for its next frame holds no buffer.
type readAheadConn struct {
	net.Conn
	raw  syscall.RawConn
	pool *sync.Pool // of *[]byte, readAheadSize long

	held     *[]byte // bytes read ahead and not yet read; nil when there are none
	off, end int     // the unread part of *held
	err      error   // what reading ahead met, returned once the held bytes are read

	// The read ahead in progress: readFD's buffer and what it returned.
	readFD   func(fd uintptr) bool
	ahead    *[]byte
	aheadN   int
	aheadErr error
}

// readAhead returns c reading ahead, or c itself when it has no file descriptor to read
// without waiting (a pipe in a test, a wrapped connection).
func readAhead(c net.Conn, pool *sync.Pool) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return newReadAheadConn(c, raw, pool)
}

// newReadAheadConn returns c reading ahead through raw, its descriptor.
func newReadAheadConn(c net.Conn, raw syscall.RawConn, pool *sync.Pool) *readAheadConn {
	rc := &readAheadConn{Conn: c, raw: raw, pool: pool}
	rc.readFD = rc.readFDOnce
	return rc
}

// Read serves held bytes first, then an error met reading ahead, then reads the
// connection; a read that fills p (an empty p says nothing) is followed by one read ahead.
func (c *readAheadConn) Read(p []byte) (int, error) {
	if c.held != nil {
		return c.readHeld(p), nil
	}
	if c.err != nil {
		err := c.err
		c.err = nil
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if err == nil && n > 0 && n == len(p) && n < readAheadSize {
		c.readMore()
	}
	return n, err
}

// readHeld copies held bytes into p and gives the buffer back once they are all read.
func (c *readAheadConn) readHeld(p []byte) int {
	n := copy(p, (*c.held)[c.off:c.end])
	c.off += n
	if c.off == c.end {
		c.pool.Put(c.held)
		c.held = nil
	}
	return n
}

// readMore reads once, without waiting, what the socket holds, up to a pooled buffer.
// Nothing there (EAGAIN) keeps nothing; an end or an error is kept for the read after the
// held bytes, as the connection would have returned it then.
func (c *readAheadConn) readMore() {
	c.ahead = c.pool.Get().(*[]byte)
	err := c.raw.Read(c.readFD)
	b, n, rerr := c.ahead, c.aheadN, c.aheadErr
	c.ahead, c.aheadErr = nil, nil
	switch {
	case err != nil:
		// Closed under it: the connection's next read says so.
	case n > 0:
		c.held, c.off, c.end = b, 0, n
		return
	case rerr == nil:
		c.err = io.EOF
	case errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EINTR):
	default:
		c.err = &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(),
			Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", rerr)}
	}
	c.pool.Put(b)
}

// readFDOnce is the read readMore makes on the descriptor; it never asks to wait, so it only
// takes what is already there. A method value made once, so a read ahead allocates nothing.
func (c *readAheadConn) readFDOnce(fd uintptr) bool {
	c.aheadN, c.aheadErr = syscall.Read(int(fd), *c.ahead)
	return true
}
