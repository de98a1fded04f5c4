package upstream

import (
	"context"
	"net"
	"sync"
)

// readAheadSize is how much a burst is read at once: what a fast model's reply of a few
// hundred frames puts in the socket between two reads is tens of kilobytes.
const readAheadSize = 16 << 10

// dialer is the shape of http.Transport's DialContext.
type dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// readingAhead wraps dial so that its connections read a burst in one system call
// ([readAheadConn]), with buffers lent from one pool per transport.
func readingAhead(dial dialer) dialer {
	pool := &sync.Pool{New: func() any { b := make([]byte, readAheadSize); return &b }}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return readAhead(c, pool), nil
	}
}
