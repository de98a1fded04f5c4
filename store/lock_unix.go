//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockSQLite takes an exclusive lock on <path>.lock for the life of the process, so a second
// process opening the same SQLite file fails at once with a clear message instead of racing
// the first: SQLite's in-process fan-out, leases and recovery assume one process (use
// PostgreSQL for several replicas). The kernel releases the lock when the process dies, so
// a crash never leaves a stale lock behind. The returned file must be closed to unlock.
func lockSQLite(path string) (*os.File, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite: lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := readHolder(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("store: open sqlite: %s is in use by another phaseflow process%s; "+
				"SQLite serves one process only (use PostgreSQL, PHASEFLOW_DATABASE_URL=postgres://…, to run several replicas)", path, holder)
		}
		return nil, fmt.Errorf("store: open sqlite: lock %s: %w", name, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// readHolder names the process that holds the lock, from the pid it wrote into the file.
func readHolder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	if pid := strings.TrimSpace(string(b[:n])); pid != "" {
		return " (pid " + pid + ")"
	}
	return ""
}
