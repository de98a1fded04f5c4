package upstream

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
)

// outgoing is a request ready to send, with the source of its body.
type outgoing struct {
	req  *http.Request
	body *replayBody
}

// A request's body is its whole prompt: instructions, history, tools, a few KiB and more
// with a long history. net/http keeps the request for as long as its response streams (the
// response points to it, and so does the connection's read loop), and a bytes.Reader body,
// or the GetBody that http.NewRequest makes for one, would keep the bytes for as long: for
// every generation, for minutes. A replayBody lets them go once the request is sent: each
// reader it opens drops its reference at the end or when closed, and the source itself is
// released when the response has begun. Until then the transport may reopen it (GetBody)
// to send the request again on a fresh connection when a kept-alive one turned out closed.
type replayBody struct {
	b atomic.Pointer[[]byte]
}

// errBodyReleased answers a reopen after the request was sent; net/http does not ask then.
var errBodyReleased = errors.New("upstream: request body already sent and released")

func newReplayBody(b []byte) *replayBody {
	r := &replayBody{}
	r.b.Store(&b)
	return r
}

// reopen is the request's GetBody.
func (r *replayBody) reopen() (io.ReadCloser, error) {
	b := r.b.Load()
	if b == nil {
		return nil, errBodyReleased
	}
	return &onceReader{b: *b}, nil
}

// release drops the source's reference to the body.
func (r *replayBody) release() { r.b.Store(nil) }

// onceReader reads its bytes once and forgets them at the end or when closed.
type onceReader struct{ b []byte }

func (o *onceReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		o.b = nil
		return 0, io.EOF
	}
	n := copy(p, o.b)
	if o.b = o.b[n:]; len(o.b) == 0 {
		o.b = nil
	}
	return n, nil
}

func (o *onceReader) Close() error {
	o.b = nil
	return nil
}
