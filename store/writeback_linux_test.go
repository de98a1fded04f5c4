//go:build linux

package store

import (
	"os"
	"path/filepath"
	"testing"
)

// The writeback waits for the log to exist, then keeps one descriptor on it, and lets go
// of it on close.
func TestLogWriteback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db-wal")
	w := newLogWriteback(path)
	defer w.close()

	w.start()
	if w.fd >= 0 || w.off {
		t.Fatalf("before the log exists: fd %d, off %v; want no descriptor, still on", w.fd, w.off)
	}
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	w.start()
	fd := w.fd
	if fd < 0 || w.off {
		t.Fatalf("once the log exists: fd %d, off %v; want a descriptor, still on", fd, w.off)
	}
	w.start()
	if w.fd != fd {
		t.Fatalf("a second start opened the log again (fd %d, then %d)", fd, w.fd)
	}
	w.close()
	if w.fd != -1 {
		t.Fatalf("after close fd is %d, want -1", w.fd)
	}
	w.close() // the store's loop closes it once; a second close must not close a reused number
}
