//go:build !unix

package store

import "os"

// lockSQLite does nothing where flock is not available: the single-process rule of SQLite
// is then the operator's to keep (see lock_unix.go).
func lockSQLite(string) (*os.File, error) { return nil, nil }
