package watcher

import "bytes"

// tail keeps the last limit bytes written to it, in a buffer it never grows past twice
// limit: a capture of any size costs the watcher a bounded amount of memory.
type tail struct {
	buf   []byte
	limit int
	cut   bool // bytes were dropped from the front
}

func newTail(limit int) *tail { return &tail{buf: make([]byte, 0, 2*limit), limit: limit} }

// Write keeps p's last bytes; it never fails.
func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.limit {
		p, t.cut = p[len(p)-t.limit:], true
	}
	if len(t.buf)+len(p) > cap(t.buf) {
		keep := t.limit - len(p)
		t.buf = t.buf[:copy(t.buf, t.buf[len(t.buf)-keep:])]
		t.cut = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Bytes returns the last limit bytes, starting at a line's start when the front was cut.
func (t *tail) Bytes() []byte {
	b := t.buf
	if len(b) > t.limit {
		b, t.cut = b[len(b)-t.limit:], true
	}
	if t.cut {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return b
}
