package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"modernc.org/sqlite"
)

// PostgreSQL pool settings (docs/dependencies.md). The idle count equals the open count because
// database/sql's default of 2 idle connections churns under a steady event-log load.
const (
	pgMaxOpenConns    = 20
	pgConnMaxLifetime = 30 * time.Minute
	pgConnMaxIdleTime = 5 * time.Minute
)

// SQLite settings.
const (
	// sqliteFile is the database file inside the data directory.
	sqliteFile = "phaseflow.db"
	// sqliteBusyTimeout (ms) only matters across processes (say `phaseflow migrate` while
	// the server runs): inside one process the single writer connection never contends.
	sqliteBusyTimeout = 10000
	// sqliteMinReaders is the floor of the read pool size.
	sqliteMinReaders = 4
)

// Open connects to the database named by databaseURL and checks that it answers. It does
// not migrate: call [Store.Migrate].
//
//   - postgres://… or postgresql://… selects PostgreSQL through lib/pq. When the URL has no
//     sslmode and its host is a loopback address (localhost, 127.0.0.0/8, ::1) or a Unix
//     socket, sslmode=disable is added: a local server rarely has TLS and lib/pq refuses to
//     connect without it. Any other host keeps lib/pq's default, so remote connections are
//     never silently downgraded; set sslmode=verify-full there.
//   - "" selects SQLite at <dataDir>/phaseflow.db, creating dataDir ("" means the working
//     directory).
//   - sqlite://path (sqlite:///abs/path for an absolute one) or a file: URI selects SQLite
//     at that path; query parameters are passed to modernc.org/sqlite.
func Open(ctx context.Context, databaseURL, dataDir string) (*Store, error) {
	switch {
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		dsn, err := postgresDSN(databaseURL)
		if err != nil {
			return nil, err
		}
		return openPostgres(ctx, dsn)
	case databaseURL == "":
		if dataDir == "" {
			dataDir = "."
		}
		return openSQLite(ctx, filepath.Join(dataDir, sqliteFile), "")
	case strings.HasPrefix(databaseURL, "sqlite:"):
		rest := strings.TrimPrefix(strings.TrimPrefix(databaseURL, "sqlite:"), "//")
		path, query, _ := strings.Cut(rest, "?")
		if path == "" {
			return nil, fmt.Errorf("store: open: %q names no file", databaseURL)
		}
		return openSQLite(ctx, path, query)
	case strings.HasPrefix(databaseURL, "file:"):
		path, query, _ := strings.Cut(databaseURL, "?")
		return openSQLite(ctx, path, query)
	default:
		return nil, fmt.Errorf("store: open: unsupported database URL scheme in %q (want postgres://, sqlite:// or file:)", redact(databaseURL))
	}
}

// postgresDSN adds sslmode=disable to a loopback URL that has no sslmode (see [Open]).
func postgresDSN(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("store: open: parse database URL: %w", err)
	}
	q := u.Query()
	if q.Get("sslmode") != "" || !isLocalHost(u.Hostname(), q.Get("host")) {
		return raw, nil
	}
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// isLocalHost reports whether the connection stays on this machine: a loopback name or
// address, or a Unix socket (an empty host, or a host= parameter that is a path).
func isLocalHost(host, hostParam string) bool {
	if hostParam != "" {
		return strings.HasPrefix(hostParam, "/")
	}
	if host == "" || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redact hides the password of a URL for error messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}

func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	c, err := pq.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	return OpenPostgresConnector(ctx, c, dsn)
}

// OpenPostgresConnector is [Open] for PostgreSQL through a caller's connector: a wrapper
// around lib/pq's (pq.NewConnector) that counts or traces statements, as tests do to keep
// the statements per turn in sight. dsn is still needed for LISTEN connections.
func OpenPostgresConnector(ctx context.Context, c driver.Connector, dsn string) (*Store, error) {
	db := sqlx.NewDb(sql.OpenDB(c), "postgres")
	db.SetMaxOpenConns(pgMaxOpenConns)
	db.SetMaxIdleConns(pgMaxOpenConns)
	db.SetConnMaxLifetime(pgConnMaxLifetime)
	db.SetConnMaxIdleTime(pgConnMaxIdleTime)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open postgres %s: %w", redact(dsn), err)
	}
	return newStore(db, db, DriverPostgres, dsn), nil
}

// openSQLite opens three pools on one file.
//
// The writer pool has exactly one connection (SetMaxOpenConns(1)). SQLite allows one writer
// at a time; with several writer connections, two transactions that both read and then
// write fail with SQLITE_BUSY no matter the busy_timeout (SQLite refuses to wait when
// waiting could deadlock). One connection turns that into a queue inside database/sql, and
// _txlock=immediate takes the write lock at BEGIN, so a check-then-insert in a transaction
// (CreateTurn) cannot race. The cost is that writes are serial, which an embedded,
// single-process store can afford; code holding a transaction must never use the pool again
// before it commits, or it waits for itself.
//
// The reader pool is query-only with several connections: in WAL mode readers do not block
// the writer nor each other, so replaying an event log does not hold up appends.
//
// A third pool of one connection checkpoints the log in the background (checkpoint.go),
// so no commit waits for a checkpoint.
//
// An in-memory database (":memory:" or mode=memory) is private to one connection, so there
// both roles share the single writer connection.
//
// A file database is locked for this process (lockSQLite): SQLite serves one process, and a
// second one opening the same file fails with a message that says so.
func openSQLite(ctx context.Context, path, query string) (*Store, error) {
	memory := strings.Contains(path, ":memory:") || strings.Contains(query, "mode=memory")
	var lock *os.File
	if !memory {
		if err := mkdirFor(path); err != nil {
			return nil, err
		}
		var err error
		if lock, err = lockSQLite(filePath(path)); err != nil {
			return nil, err
		}
	}
	st, err := openSQLitePools(ctx, path, query, memory)
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	st.lock = lock
	return st, nil
}

// openSQLitePools opens the writer, reader and checkpoint pools described at openSQLite,
// and starts the checkpoints.
func openSQLitePools(ctx context.Context, path, query string, memory bool) (*Store, error) {
	common := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_time_format=sqlite&_timezone=UTC", sqliteBusyTimeout)
	writerDSN := joinQuery(path, query, common+fmt.Sprintf("&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(%d)&_txlock=immediate", sqliteAutoCheckpoint))
	w, err := openSQLitePool(ctx, writerDSN, 1)
	if err != nil {
		return nil, err
	}
	if memory {
		return newStore(w, w, DriverSQLite, ""), nil
	}
	readers := max(sqliteMinReaders, runtime.GOMAXPROCS(0))
	r, err := openSQLitePool(ctx, joinQuery(path, query, common+"&_pragma=query_only(1)"), readers)
	if err != nil {
		w.Close()
		return nil, err
	}
	c, err := openSQLitePool(ctx, joinQuery(path, query, common), 1)
	if err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	st := newStore(w, r, DriverSQLite, "")
	st.ckpt = c
	st.commits = make(chan struct{}, 1) // one pending note is all afterCommit needs
	st.startCheckpoints(c)
	return st, nil
}

func openSQLitePool(ctx context.Context, dsn string, conns int) (*sqlx.DB, error) {
	db := sqlx.NewDb(sql.OpenDB(sqliteConnector{dsn: dsn, drv: &sqlite.Driver{}}), "sqlite")
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	// Connections to a local file are cheap to keep and costly to reopen (every pragma runs
	// again), so they live as long as the pool.
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open sqlite %s: %w", dsn, err)
	}
	return db, nil
}

// mkdirFor creates the folder that will hold the SQLite file.
func mkdirFor(path string) error {
	dir := filepath.Dir(filePath(path))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("store: open sqlite: create %s: %w", dir, err)
	}
	return nil
}

// filePath is the file system path of a SQLite database path or file: URI.
func filePath(path string) string {
	p := strings.TrimPrefix(path, "file:")
	if strings.HasPrefix(p, "//") { // file://host/path or file:///path
		if u, err := url.Parse("file:" + p); err == nil {
			p = u.Path
		}
	}
	return p
}

// joinQuery builds path?query&extra.
func joinQuery(path, query, extra string) string {
	if query == "" {
		return path + "?" + extra
	}
	return path + "?" + query + "&" + extra
}
