package api

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"
)

// refusalBody is what a connection past the limits is told before it is closed, as an HTTP
// 503 with Retry-After, so a client or load balancer learns when to retry rather than
// seeing a reset.
const refusalBody = `{"error":{"code":"over_capacity","message":"the server holds as many connections as it can"}}` + "\n"

// A refused connection's request is read before the answer (closing a socket with its
// request unread resets it, and the client loses the answer), for at most refusalTime;
// at most maxRefusing are answered at once, and past them a connection is closed unanswered,
// so a flood costs a bounded number of goroutines and never slows the accept loop.
const (
	refusalTime = 250 * time.Millisecond
	maxRefusing = 32
)

// refuse answers c on a goroutine of the tracker's, or closes it when too many refusals are
// under way.
func (t *ConnTracker) refuse(c net.Conn) {
	select {
	case t.refusing <- struct{}{}:
		if !t.group.Go(func() { defer func() { <-t.refusing }(); t.answer(c) }) {
			_ = c.Close()
		}
	default:
		_ = c.Close()
	}
}

// answer reads the request's head (within refusalTime) and answers: a health probe as the
// health check says, anything else 503; then closes.
func (t *ConnTracker) answer(c net.Conn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(refusalTime))
	rd := bufio.NewReader(c)
	first, _ := rd.ReadSlice('\n') // a request that does not come in time is answered 503
	path := probePath(first)
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil || len(line) <= 2 { // the blank line ending the head, or no request
			break
		}
	}
	status, body := http.StatusServiceUnavailable, []byte(refusalBody)
	if path != "" && t.lim.Health != nil {
		status, body = t.lim.Health(path)
	}
	_ = c.SetWriteDeadline(time.Now().Add(refusalTime))
	_, _ = c.Write(response(status, body)) // a client that cannot take it is closed all the same
}

// probePath is the path of a health probe's request line ("GET /healthz HTTP/1.1"), ""
// for any other request.
func probePath(line []byte) string {
	for _, p := range []string{"/healthz", "/readyz"} {
		if bytes.HasPrefix(line, []byte("GET "+p+" ")) || bytes.HasPrefix(line, []byte("GET "+p+"?")) {
			return p
		}
	}
	return ""
}

// response is an HTTP/1.1 answer that closes its connection; a 503 says when to retry.
func response(status int, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\nContent-Type: application/json\r\n")
	if status == http.StatusServiceUnavailable {
		b.WriteString("Retry-After: 1\r\n")
	}
	b.WriteString("Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}
