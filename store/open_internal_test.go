package store

import (
	"path/filepath"
	"testing"
)

// The writer connection keeps a small page cache (sqliteWriterCacheKiB: the memory it
// saves is measured in docs/performance.md); the readers keep SQLite's default, which
// serves replays of older logs. A negative cache_size is in KiB.
func TestSQLiteWriterCacheIsSmall(t *testing.T) {
	s, err := Open(t.Context(), "", filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, pool := range []struct {
		name string
		db   interface {
			Get(dest any, query string, args ...any) error
		}
		want int
	}{
		{"writer", s.db, -sqliteWriterCacheKiB},
		{"reader", s.rdb, -2000},
	} {
		var got int
		if err := pool.db.Get(&got, `PRAGMA cache_size`); err != nil {
			t.Fatalf("%s: %v", pool.name, err)
		}
		if got != pool.want {
			t.Errorf("%s connection: cache_size = %d, want %d", pool.name, got, pool.want)
		}
	}
}
