package api

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// refusalBody is what a connection past the cap is told before it is closed, as an HTTP
// 503 with Retry-After (refusal), so a client or load balancer learns when to retry rather
// than seeing a reset.
const refusalBody = `{"error":{"code":"over_capacity","message":"the server holds as many connections as it can"}}` + "\n"

func refusal() []byte {
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
		"Connection: close\r\nContent-Length: " + strconv.Itoa(len(refusalBody)) + "\r\n\r\n" + refusalBody)
}

// refusalWrite bounds the write of the refusal: a fresh socket's buffer takes it at once,
// and the accept loop must never wait on a client.
const refusalWrite = 50 * time.Millisecond

// LimitConnections serves at most max connections from inner at once: past it a new
// connection is answered 503 with Retry-After and closed, so a flood of connections (one
// user opening thousands of streams) cannot take the file descriptors the database, the
// log and the other users' requests need. A connection counts until it is closed, also
// while a detached event stream holds it.
func LimitConnections(inner net.Listener, max int) net.Listener {
	return &limitedListener{Listener: inner, max: int64(max)}
}

type limitedListener struct {
	net.Listener
	max  int64
	open atomic.Int64
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
		_ = c.SetWriteDeadline(time.Now().Add(refusalWrite))
		_, _ = c.Write(refusal()) // a client that cannot take it is closed all the same
		_ = c.Close()
	}
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
