package api

import "net"

// Hooks for the external test package (api_test).

// FlushDetached returns the send of a detached stream's sink on conn, chunked as an
// HTTP/1.1 response is, with buffers of its own.
func FlushDetached(conn net.Conn) func(frames []byte) error {
	cs := newConnSink(conn, true, &frameBuffers{})
	return func(frames []byte) error { return cs.send(frames, false) }
}
