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
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

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

// allMigrations is every migration's version, in the order Migrate applies them.
var allMigrations = []string{
	"0001_init", "0002_leases", "0003_event_data_text", "0004_json_as_text", "0005_events_unreferenced",
	"0006_turn_records", "0007_client_request_per_user", "0008_lz4_toast", "0009_strategy_by_session_and_user",
	"0010_event_runs", "0011_watched_messages", "0012_event_runs_lz4", "0013_skills", "0014_user_usage", "0015_user_message_rate", "0016_questions",
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
			if diff := cmp.Diff(allMigrations, first); diff != "" {
				t.Errorf("first Migrate (-want +got):\n%s", diff)
			}
			second, err := fresh.Migrate(ctx)
			if err != nil || len(second) != 0 {
				t.Errorf("second Migrate = %v, %v; want nothing applied", second, err)
			}
		})

		t.Run("0007 keeps a client_request_id reused across sessions on its first turn", func(t *testing.T) {
			old := open(t, freshURL(t, s.Driver()), "")
			if _, err := old.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			// Back to the schema before 0007: one client_request_id per session.
			for _, q := range []string{`DROP INDEX messages_client_request_id_idx`,
				`CREATE UNIQUE INDEX messages_client_request_id_idx ON messages (session_id, client_request_id) WHERE role = 'user' AND client_request_id <> ''`,
				`DELETE FROM schema_migrations WHERE version = '0007_client_request_per_user'`} {
				if err := old.Exec(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			u1, a1 := createTurn(t, old, newSession(t, old, "alice"), "first", "reused")
			finish(t, old, a1, store.StatusCompleted)
			// What the old code let a client do: the same id in another session.
			u2, _ := turn(newSession(t, old, "alice"), "second", "reused")
			u2.ID, u2.Role, u2.Status, u2.CreatedAt = "older-schema-user-2", "user", store.StatusCompleted, time.Now()
			if err := old.InsertMessage(ctx, u2); err != nil {
				t.Fatal(err)
			}
			if applied, err := old.Migrate(ctx); err != nil || !slices.Equal(applied, []string{"0007_client_request_per_user"}) {
				t.Fatalf("Migrate over reused ids = %v, %v", applied, err)
			}
			first, _ := old.GetMessage(ctx, u1.ID, "alice")
			second, _ := old.GetMessage(ctx, u2.ID, "alice")
			if first.ClientRequestID != "reused" || second.ClientRequestID != "" {
				t.Fatalf("client ids after 0007: first %q, second %q; want the first kept", first.ClientRequestID, second.ClientRequestID)
			}
		})

		if s.Driver() == store.DriverSQLite {
			return // a second opener of a SQLite file is refused: TestSQLiteServesOneProcess
		}
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
			want := allMigrations
			if errs[0] != nil || errs[1] != nil || !slices.Equal(all, want) {
				t.Errorf("concurrent Migrate: applied %v, errors %v; want %v once", applied, errs, want)
			}
		})
	})
}

// TestSQLiteServesOneProcess checks that a second opener of the same SQLite file is refused
// with a message that says why and what to use instead, and that closing (or dying, which
// the kernel handles the same way) frees the file.
func TestSQLiteServesOneProcess(t *testing.T) {
	dir := t.TempDir()
	first, err := store.Open(t.Context(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Open(t.Context(), "", dir)
	if err == nil || !strings.Contains(err.Error(), "in use by another phaseflow process") || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("second Open = %v, want a refusal naming the rule", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again := open(t, "", dir)
	if err := again.Ping(t.Context()); err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
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

// TestLargeColumnsUseLZ4 checks 0008, 0010 and 0012 on PostgreSQL: where the server has
// lz4, the large columns (a trace's body, a message's metadata, a run's payloads, names and
// times) are compressed with it; where it has not, they keep pglz.
func TestLargeColumnsUseLZ4(t *testing.T) {
	s := storetest.Postgres(t)
	ctx := t.Context()
	hasLZ4, err := s.QueryString(ctx, `SELECT CASE WHEN 'lz4' = ANY(enumvals) THEN 'yes' ELSE 'no' END
		FROM pg_settings WHERE name = 'default_toast_compression'`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"yes": "l", "no": ""}[hasLZ4]
	for _, col := range []struct{ table, column string }{
		{"message_traces", "body"}, {"messages", "metadata"},
		{"message_event_runs", "data"}, {"message_event_runs", "names"}, {"message_event_runs", "times"},
	} {
		got, err := s.QueryString(ctx, `SELECT attcompression::text FROM pg_attribute
			WHERE attrelid = ?::regclass AND attname = ?`, col.table, col.column)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s.%s compression %q, want %q (server has lz4: %s)", col.table, col.column, got, want, hasLZ4)
		}
	}
}

// A commit never runs a checkpoint: the store copies SQLite's log back into the database
// file in the background, long before the writer's own threshold (see checkpoint.go), and
// Close stops the goroutine that does it.
func TestSQLiteCheckpointsInTheBackground(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	s, err := store.Open(t.Context(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.Exec(ctx, `CREATE TABLE probe (b BLOB)`); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "phaseflow.db")
	before := fileSize(t, file)
	// 2 MB, about 500 pages: a fifth of SQLite's default threshold, so no commit
	// checkpoints them, and in WAL mode nothing else writes the database file.
	const written = 2 << 20
	for range 50 {
		if err := s.Exec(ctx, `INSERT INTO probe VALUES (randomblob(?))`, written/50); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for fileSize(t, file) < before+written {
		if time.Now().After(deadline) {
			t.Fatalf("database file still %d bytes 5 s after 2 MB were committed (was %d): the log was not checkpointed", fileSize(t, file), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A commit never starts SQLite's log over: once a checkpoint has copied the whole log,
// the checkpointer starts it over itself (see checkpoint.go), because SQLite syncs a
// restarted log's header to disk inside the write that restarts it. A restart shows as a
// new salt in the log's header.
func TestSQLiteCommitsDoNotRestartTheLog(t *testing.T) {
	dir := t.TempDir()
	s := open(t, "", dir)
	ctx := t.Context()
	if err := s.Exec(ctx, `CREATE TABLE probe (n INTEGER)`); err != nil {
		t.Fatal(err)
	}
	wal := filepath.Join(dir, "phaseflow.db-wal")
	for i := range 3 {
		before := walSalt(t, wal)
		if err := s.Exec(ctx, `INSERT INTO probe VALUES (?)`, i); err != nil {
			t.Fatal(err)
		}
		if walSalt(t, wal) != before {
			t.Fatalf("commit %d restarted the log", i)
		}
		// The checkpointer copies the commit within a tenth of a second, and restarts.
		deadline := time.Now().Add(5 * time.Second)
		for walSalt(t, wal) == before {
			if time.Now().After(deadline) {
				t.Fatalf("the log was not restarted 5 s after commit %d", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// walSalt reads the salts of SQLite's log header (bytes 16 to 24), which change each time
// the log starts over.
func walSalt(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	salt := make([]byte, 8)
	if _, err := f.ReadAt(salt, 16); err != nil {
		t.Fatalf("read the log's header: %v", err)
	}
	return string(salt)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
