//go:build linux

package store

import (
	"errors"

	"golang.org/x/sys/unix"
)

// logWriteback starts the kernel writing SQLite's log to disk as it grows (see
// checkpoint.go: why). It holds a descriptor of its own on the log: the log carries none of
// SQLite's POSIX locks (those are on the database and -shm files), so opening and closing
// it cannot drop one, which a second descriptor on the database file could.
type logWriteback struct {
	path string
	fd   int  // -1 until the log exists
	off  bool // the file system refused: stop asking
}

func newLogWriteback(path string) *logWriteback { return &logWriteback{path: path, fd: -1} }

// start asks the kernel to begin writing the log's dirty pages and returns at once
// (SYNC_FILE_RANGE_WRITE waits for nothing). It opens the log on first use; a log not yet
// created is tried again at the next call, and a file system without the call is left
// alone from then on.
func (w *logWriteback) start() {
	if w.off {
		return
	}
	if w.fd < 0 {
		fd, err := unix.Open(w.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		w.fd = fd
	}
	err := unix.SyncFileRange(w.fd, 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ESPIPE) {
		w.off = true
	}
}

// close lets go of the log's descriptor.
func (w *logWriteback) close() {
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}
