// Package store is Phaseflow's persistence: sessions, messages, the per-message event log,
// MCP calls, phase transitions, strategies and stored prompt versions.
//
// One package serves two databases. PostgreSQL (through sqlx and lib/pq) is the production
// store: several replicas share it and learn of new events through LISTEN/NOTIFY. SQLite
// (the pure-Go modernc.org/sqlite driver) is the embedded default that needs no set-up;
// it serves a single process, whose in-memory fan-out needs no notifications. Both run the
// same test suite (see package storetest), so callers never branch on the driver.
//
// Expected states are errors callers test with errors.Is / errors.As: [ErrNotFound] (a
// missing row and another user's row look the same), [ErrPhaseChanged] (a phase move lost
// a race), [*GenerationRunningError] and [*DuplicateRequestError].
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
)

// Driver names returned by [Store.Driver].
const (
	DriverPostgres = "postgres"
	DriverSQLite   = "sqlite"
)

// Store is a handle on one database. It is safe for concurrent use; Close it once.
type Store struct {
	// db takes every write, and every read on PostgreSQL. On SQLite it is capped at one
	// connection (see openSQLite).
	db *sqlx.DB
	// rdb serves plain reads. On SQLite it is a separate query-only pool so readers never
	// queue behind the single writer (WAL lets them run in parallel); on PostgreSQL it is db.
	rdb    *sqlx.DB
	driver string
	// dsn is the PostgreSQL connection string, kept for LISTEN connections.
	dsn string
	// lock is the SQLite file's process lock (see lockSQLite); nil on PostgreSQL.
	lock *os.File
	// ckpt is SQLite's checkpoint connection (see checkpoint.go); nil on PostgreSQL and for
	// an in-memory database.
	ckpt *sqlx.DB
	// commits hears of each event-log commit on a SQLite file (noteCommit), so that a
	// checkpoint starts in the quiet after one (afterCommit); nil where nothing checkpoints.
	commits chan struct{}

	// stmts are the hot statements prepared on the pool (see prepared).
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
	// rebinds maps each fixed statement's text to its PostgreSQL text (see rebound), and
	// locks are the begin's two reads (see lockQuery), both worked out once: building and
	// rebinding them on every turn was 2% of a PostgreSQL replica's allocations.
	rebinds sync.Map
	locks   [2]string
	// fresh is the sessions this replica created that have had no turn yet (PostgreSQL:
	// see freshSessions).
	fresh *freshSessions

	// bg ends when the store closes, stopping listener goroutines; wg waits for them.
	bg     context.Context
	stopBg context.CancelFunc
	mu     sync.Mutex // guards closed and wg.Add against Close
	closed bool
	wg     sync.WaitGroup
}

func newStore(db, rdb *sqlx.DB, driver, dsn string) *Store {
	bg, stop := context.WithCancel(context.Background())
	s := &Store{db: db, rdb: rdb, driver: driver, dsn: dsn, bg: bg, stopBg: stop, fresh: newFreshSessions()}
	s.locks = [2]string{s.buildLockQuery(false), s.buildLockQuery(true)}
	return s
}

// Driver reports which database the store talks to: [DriverPostgres] or [DriverSQLite].
func (s *Store) Driver() string { return s.driver }

// Ping checks that the database answers; the readiness probe calls it.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Close stops the listeners started by [Store.Listen], waits for their goroutines, and
// closes the connection pools. Calling it again returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()

	s.stopBg()
	s.wg.Wait()
	var errs []error
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmtMu.Unlock()
	if s.rdb != s.db {
		errs = append(errs, s.rdb.Close())
	}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.Close())
	}
	errs = append(errs, s.db.Close())
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// isPostgres is the one switch for dialect differences in SQL text.
func (s *Store) isPostgres() bool { return s.driver == DriverPostgres }

// NewID returns a fresh row id: a version 7 UUID, which sorts by creation time. Rows that
// are written together are created together, so their keys sit side by side in every index
// that starts with an id (message_event_runs' (message_id, seq) above all): a group commit of
// sixteen turns' events then changes a few index pages at the right edge rather than one
// random page per turn; random (version 4) ids made SQLite write markedly more pages per
// turn under load. The order also makes ids a sensible tie-breaker when two rows
// share a timestamp. Every id of a stored row comes from here.
func NewID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// now returns the current time as the store writes it: UTC, truncated to microseconds
// (PostgreSQL's precision), so a value read back equals the value written.
func now() time.Time { return dbTime(time.Now()) }

// dbTime brings t to the precision and zone both databases keep.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// orNow returns dbTime(t), or now() when t is zero.
func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return now()
	}
	return dbTime(t)
}

// nullString maps "" to SQL NULL, for optional references such as reply_to.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
