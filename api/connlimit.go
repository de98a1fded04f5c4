package api

import (
	"bufio"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/phaseflow/phaseflow/internal/workgroup"
)

// refusalBody is what a connection past the cap is told before it is closed, as an HTTP
// 503 with Retry-After (refusal), so a client or load balancer learns when to retry rather
// than seeing a reset.
const refusalBody = `{"error":{"code":"over_capacity","message":"the server holds as many connections as it can"}}` + "\n"

func refusal() []byte {
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(refusalBody)) + "\r\n\r\n" + refusalBody)
}

// A refused connection's request is read before the answer (closing a socket with its
// request unread resets it, and the client loses the answer), for at most refusalTime;
// at most maxRefusing are answered at once, and past them a connection is closed unanswered,
// so a flood costs a bounded number of goroutines and never slows the accept loop.
const (
	refusalTime = 250 * time.Millisecond
	maxRefusing = 32
)

// LimitConnections serves at most max connections from inner at once: past it a new
// connection is answered 503 with Retry-After and closed, so a flood of connections (one
// user opening thousands of streams) cannot take the file descriptors the database, the
// log and the other users' requests need. A connection counts until it is closed, also
// while a detached event stream holds it.
func LimitConnections(inner net.Listener, max int) net.Listener {
	return &limitedListener{Listener: inner, max: int64(max), refusing: make(chan struct{}, maxRefusing)}
}

type limitedListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refusing chan struct{} // the refusals under way
	group    workgroup.Group
}

// Accept returns the next connection under the cap, refusing those past it on the way.
func (l *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &countedConn{Conn: c, release: sync.OnceFunc(func() { l.open.Add(-1) })}, nil
		}
		l.open.Add(-1)
		select {
		case l.refusing <- struct{}{}:
			if !l.group.Go(func() { defer func() { <-l.refusing }(); refuse(c) }) {
				_ = c.Close()
			}
		default:
			_ = c.Close()
		}
	}
}

// Close stops accepting and waits for the refusals under way.
func (l *limitedListener) Close() error {
	err := l.Listener.Close()
	l.group.Close()
	l.group.Wait()
	return err
}

// refuse reads the request's head (within refusalTime), answers 503 and closes.
func refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(refusalTime))
	rd := bufio.NewReader(c)
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil || len(line) <= 2 { // the blank line ending the head, or no request
			break
		}
	}
	_ = c.SetWriteDeadline(time.Now().Add(refusalTime))
	_, _ = c.Write(refusal()) // a client that cannot take it is closed all the same
}

// countedConn gives its place back when it is closed, once.
type countedConn struct {
	net.Conn
	release func()
}

func (c *countedConn) Close() error {
	c.release()
	return c.Conn.Close()
}
