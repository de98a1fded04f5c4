// Package storetest gives tests a real, empty database: a fresh PostgreSQL database per
// test (dropped afterwards) or a SQLite file in the test's temporary folder. Every package
// whose tests touch persistence uses it, so all of them run against both databases the
// same way the store's own suite does.
//
// PostgreSQL comes from TEST_DATABASE_URL (an admin URL allowed to CREATE DATABASE; default
// [DefaultAdminURL]). When it cannot be reached the test is skipped on a developer machine
// but fails when the CI environment variable is set: CI must never pass by skipping.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/lib/pq" // the admin connection uses lib/pq directly

	"github.com/phaseflow/phaseflow/store"
)

// DefaultAdminURL is the PostgreSQL admin connection used when TEST_DATABASE_URL is unset.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// adminTimeout bounds every admin statement and the reachability check, so a missing server
// skips quickly instead of hanging the test.
const adminTimeout = 10 * time.Second

// Postgres returns a migrated store on a fresh PostgreSQL database that is dropped when the
// test ends (the store is closed first).
func Postgres(t testing.TB) *store.Store {
	t.Helper()
	return openMigrated(t, PostgresDSN(t), "")
}

// PostgresDSN creates a fresh, empty (not migrated) PostgreSQL database named t_<random>,
// registers its removal (DROP DATABASE … WITH (FORCE), which also ends connections a
// child process left open) and returns its URL. End-to-end tests hand the URL to the real
// binary, which migrates at start.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	admin := adminURL(t)
	db := connectAdmin(t, admin)
	defer db.Close()

	name := "t_" + randomHex(t, 8)
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	// Identifiers cannot be bound parameters; name is made of [a-z0-9_] only.
	if _, err := db.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("storetest: create database %s: %v", name, err)
	}
	t.Cleanup(func() { dropDatabase(t, admin, name) })

	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("storetest: parse admin URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// SQLite returns a migrated store on a new SQLite file in t.TempDir(), closed when the test
// ends.
func SQLite(t testing.TB) *store.Store {
	t.Helper()
	return openMigrated(t, "", t.TempDir())
}

// Each runs fn twice, as the subtests "postgres" and "sqlite", each with its own fresh
// store. The postgres subtest skips (or fails in CI) as [Postgres] does.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
}

// openMigrated opens and migrates a store and closes it at cleanup.
func openMigrated(t testing.TB, databaseURL, dataDir string) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	s, err := store.Open(ctx, databaseURL, dataDir)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("storetest: %v", err)
		}
	})
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return s
}

// adminURL reads TEST_DATABASE_URL. It must be a URL (the database name is replaced in it);
// like store.Open for a local server, a missing sslmode becomes disable, since test servers
// run without TLS.
func adminURL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv("TEST_DATABASE_URL")
	if raw == "" {
		return DefaultAdminURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("storetest: TEST_DATABASE_URL must be a postgres:// URL")
	}
	q := u.Query()
	if q.Get("sslmode") == "" {
		q.Set("sslmode", "disable")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// connectAdmin opens the admin connection, skipping the test (or failing it in CI) when the
// server does not answer.
func connectAdmin(t testing.TB, admin string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", admin)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		err = db.PingContext(ctx)
		cancel()
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		unreachable(t, err)
	}
	return db
}

// unreachable skips locally and fails in CI.
func unreachable(t testing.TB, err error) {
	t.Helper()
	msg := "storetest: PostgreSQL unreachable (set TEST_DATABASE_URL): " + err.Error()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// dropDatabase removes a test database with a fresh admin connection.
func dropDatabase(t testing.TB, admin, name string) {
	db, err := sql.Open("postgres", admin)
	if err != nil {
		t.Errorf("storetest: drop database %s: %v", name, err)
		return
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
		t.Errorf("storetest: drop database %s: %v", name, err)
	}
}

// randomHex returns 2n lowercase hex digits.
func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return hex.EncodeToString(b)
}

// Another opens a second store on the PostgreSQL database of s, as another replica would
// (its own pools and in-process state), closed when the test ends.
func Another(t testing.TB, s *store.Store) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var name string
	if err := s.Pools()["main"].QueryRowContext(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	u, err := url.Parse(adminURL(t))
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	u.Path = "/" + name
	return openMigrated(t, u.String(), "")
}
