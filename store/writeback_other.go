//go:build !linux

package store

// logWriteback does nothing where the kernel has no sync_file_range: the checkpoint's own
// sync writes the log (see checkpoint.go).
type logWriteback struct{}

func newLogWriteback(string) *logWriteback { return &logWriteback{} }

func (*logWriteback) start() {}

func (*logWriteback) close() {}
