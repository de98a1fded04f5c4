package store_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// freshURL returns the URL of an empty database of the given driver.
func freshURL(t *testing.T, driver string) string {
	t.Helper()
	if driver == store.DriverPostgres {
		return storetest.PostgresDSN(t)
	}
	return "sqlite://" + filepath.Join(t.TempDir(), "fresh.db")
}

func open(t *testing.T, databaseURL, dataDir string) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), databaseURL, dataDir)
	if err != nil {
		t.Fatalf("Open(%q): %v", databaseURL, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestMigrate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		t.Run("current schema applies nothing", func(t *testing.T) {
			applied, err := s.Migrate(ctx)
			if err != nil || len(applied) != 0 {
				t.Fatalf("Migrate = %v, %v; want nothing applied", applied, err)
			}
		})

		t.Run("fresh database, twice", func(t *testing.T) {
			fresh := open(t, freshURL(t, s.Driver()), "")
			first, err := fresh.Migrate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"0001_init"}, first); diff != "" {
				t.Errorf("first Migrate (-want +got):\n%s", diff)
			}
			second, err := fresh.Migrate(ctx)
			if err != nil || len(second) != 0 {
				t.Errorf("second Migrate = %v, %v; want nothing applied", second, err)
			}
		})

		t.Run("two instances at once", func(t *testing.T) {
			u := freshURL(t, s.Driver())
			stores := []*store.Store{open(t, u, ""), open(t, u, "")}
			applied := make([][]string, len(stores))
			errs := make([]error, len(stores))
			var wg sync.WaitGroup
			for i, st := range stores {
				wg.Go(func() { applied[i], errs[i] = st.Migrate(ctx) })
			}
			wg.Wait()
			all := slices.Concat(applied...)
			if errs[0] != nil || errs[1] != nil || !slices.Equal(all, []string{"0001_init"}) {
				t.Errorf("concurrent Migrate: applied %v, errors %v; want 0001_init once", applied, errs)
			}
		})
	})
}

func TestOpen(t *testing.T) {
	t.Run("empty URL makes the data dir", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b")
		s := open(t, "", dir)
		if s.Driver() != store.DriverSQLite {
			t.Errorf("Driver() = %q, want sqlite", s.Driver())
		}
		if _, err := os.Stat(filepath.Join(dir, "phaseflow.db")); err != nil {
			t.Errorf("database file: %v", err)
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})

	sqliteCases := []struct {
		name string
		url  func(dir string) string
	}{
		{"sqlite URL", func(dir string) string { return "sqlite://" + filepath.Join(dir, "sub", "x.db") }},
		{"file URI", func(dir string) string { return "file:" + filepath.Join(dir, "sub", "x.db") + "?cache=private" }},
		{"in memory", func(string) string { return "file::memory:" }},
	}
	for _, tc := range sqliteCases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, tc.url(t.TempDir()), "")
			if _, err := s.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			sess := &store.Session{UserID: "u"}
			if err := s.CreateSession(t.Context(), sess); err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetSession(t.Context(), sess.ID, "u"); err != nil {
				t.Fatalf("GetSession after CreateSession: %v", err)
			}
		})
	}

	t.Run("unsupported scheme", func(t *testing.T) {
		_, err := store.Open(t.Context(), "mysql://user:secret@host/db", "")
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(mysql) err = %v, want an error without the password", err)
		}
	})

	t.Run("postgres loopback without sslmode", func(t *testing.T) {
		u, err := url.Parse(storetest.PostgresDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Del("sslmode")
		u.RawQuery = q.Encode()
		s := open(t, u.String(), "")
		if s.Driver() != store.DriverPostgres {
			t.Errorf("Driver() = %q, want postgres", s.Driver())
		}
	})

	t.Run("unreachable postgres", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		if _, err := store.Open(ctx, "postgres://nobody@127.0.0.1:1/none", ""); err == nil {
			t.Error("Open(port 1) = nil, want an error")
		}
	})
}
