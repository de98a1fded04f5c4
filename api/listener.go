package api

import (
	"errors"
	"net"
	"sync"
)

// listener is the net.Listener the HTTP server serves on: the connections its own listener
// accepts, and those detached streams give back when they end (detach.go), which the server
// then serves as it serves a new connection: their clients' next requests.
type listener struct {
	net.Listener // accepts new connections; Addr

	accepted chan accepted  // from the accept goroutine
	back     chan net.Conn  // given back, waiting for Accept; bounded by backlog
	done     chan struct{}  // closed by Close
	wg       sync.WaitGroup // the accept goroutine
	mu       sync.Mutex     // guards closed against giveBack
	closed   bool
}

// accepted is one result of the inner listener's Accept.
type accepted struct {
	conn net.Conn
	err  error
}

// backlog bounds the connections given back and not yet taken by the server's Accept loop
// (which takes each at once); past it a connection is closed, and its client opens another.
const backlog = 128

// Listener wraps inner for serving [Server.Handler]: connections of detached event streams
// come back through it when their streams end, so a client's keep-alive connection serves
// its next request. Serve the handler on the returned listener (closing it closes inner),
// and call Listener once: the last listener made takes every connection back. Without one,
// those connections are closed when their streams end.
func (s *Server) Listener(inner net.Listener) net.Listener {
	l := &listener{Listener: inner, accepted: make(chan accepted), back: make(chan net.Conn, backlog), done: make(chan struct{})}
	l.wg.Go(l.acceptLoop)
	s.listener = l
	return l
}

// acceptLoop passes on what the inner listener accepts, errors included (net/http retries
// temporary ones), until it is closed.
func (l *listener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- accepted{c, err}:
		case <-l.done:
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Accept returns the next connection: a new one, or one given back.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.back:
		return c, nil
	case a := <-l.accepted:
		return a.conn, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, waits for the accept goroutine and closes the connections given
// back that nobody took.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	l.mu.Unlock()
	err := l.Listener.Close()
	l.wg.Wait()
	for {
		select {
		case c := <-l.back:
			_ = c.Close()
		default:
			return err
		}
	}
}

// giveBack queues c for Accept, or closes it when the listener is closed or its backlog
// full.
func (l *listener) giveBack(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return
	}
	select {
	case l.back <- c:
	default:
		_ = c.Close()
	}
}
