package storetest

import (
	"context"
	"database/sql/driver"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lib/pq"

	"github.com/phaseflow/phaseflow/store"
)

// Counter counts what a store sends PostgreSQL: statements (each one round trip with lib/pq,
// and one more, a parse of its own, for a statement with arguments that is not prepared),
// and transactions begun and committed (each BEGIN and COMMIT one more round trip). Tests
// keep the cost of a turn in sight with it.
type Counter struct {
	statements, parses, begins, commits atomic.Int64

	mu   sync.Mutex
	seen []string // the statements so far, shortened, for a test to show what it counted
}

// scopeKey carries the *scope a [Counter.Scope] context also counts into.
type scopeKey struct{}

// Scope returns a context whose statements, BEGINs and COMMITs are also counted apart, and
// a function reading that count. Other goroutines' work (a turn's own reads running beside
// the request that started it) stays out of it, so a test can measure one call exactly.
func (c *Counter) Scope(ctx context.Context) (context.Context, func() Counts) {
	sc := &scope{}
	return context.WithValue(ctx, scopeKey{}, sc), func() Counts {
		return Counts{Statements: sc.statements.Load(), Parses: sc.parses.Load(), Begins: sc.begins.Load(), Commits: sc.commits.Load()}
	}
}

// scope is the count of one [Counter.Scope].
type scope struct{ statements, parses, begins, commits atomic.Int64 }

// scopeOf returns the scope ctx counts into, nil for none.
func scopeOf(ctx context.Context) *scope {
	sc, _ := ctx.Value(scopeKey{}).(*scope)
	return sc
}

// note counts a statement and keeps its start; parsed says lib/pq parses it first in a
// round trip of its own (a statement with arguments that is not prepared).
func (c *Counter) note(ctx context.Context, q string, parsed bool) {
	c.statements.Add(1)
	sc := scopeOf(ctx)
	if sc != nil {
		sc.statements.Add(1)
	}
	if parsed {
		c.parses.Add(1)
		if sc != nil {
			sc.parses.Add(1)
		}
	}
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 90 {
		q = q[:90] + "…"
	}
	c.mu.Lock()
	c.seen = append(c.seen, q)
	c.mu.Unlock()
}

// Statements returns the statements counted since the n-th (a Counts.Statements value),
// shortened, in the order they were sent.
func (c *Counter) Statements(since int64) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen[min(int(since), len(c.seen)):])
}

// Counts is a snapshot of a Counter.
type Counts struct {
	// Parses counts the statements among Statements that cost a parse round trip first.
	Statements, Parses, Begins, Commits int64
}

// RoundTrips is every statement, parse, BEGIN and COMMIT.
func (c Counts) RoundTrips() int64 { return c.Statements + c.Parses + c.Begins + c.Commits }

// Snapshot reads the counter.
func (c *Counter) Snapshot() Counts {
	return Counts{Statements: c.statements.Load(), Parses: c.parses.Load(), Begins: c.begins.Load(), Commits: c.commits.Load()}
}

// Sub is what happened between an earlier snapshot and this one.
func (c Counts) Sub(earlier Counts) Counts {
	return Counts{Statements: c.Statements - earlier.Statements, Parses: c.Parses - earlier.Parses,
		Begins: c.Begins - earlier.Begins, Commits: c.Commits - earlier.Commits}
}

// PostgresCounted is [Postgres] with every statement counted.
func PostgresCounted(t testing.TB) (*store.Store, *Counter) {
	t.Helper()
	dsn := PostgresDSN(t)
	pc, err := pq.NewConnector(dsn)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	c := &Counter{}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	s, err := store.OpenPostgresConnector(ctx, connector{pc, c}, dsn)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return s, c
}

// connector wraps lib/pq's connector so each connection counts.
type connector struct {
	driver.Connector
	c *Counter
}

func (k connector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := k.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: cn, c: k.c}, nil
}

// conn forwards every optional interface lib/pq's connection has, counting on the way.
type conn struct {
	driver.Conn
	c *Counter
}

func (cn *conn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	cn.c.note(ctx, q, len(args) > 0)
	return cn.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (cn *conn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	cn.c.note(ctx, q, len(args) > 0)
	return cn.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (cn *conn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	st, err := cn.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return &stmt{Stmt: st, c: cn.c, q: q}, nil
}

func (cn *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	cn.c.begins.Add(1)
	sc := scopeOf(ctx)
	if sc != nil {
		sc.begins.Add(1)
	}
	tx, err := cn.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &txn{Tx: tx, c: cn.c, sc: sc}, nil
}

func (cn *conn) Ping(ctx context.Context) error { return cn.Conn.(driver.Pinger).Ping(ctx) }

func (cn *conn) CheckNamedValue(nv *driver.NamedValue) error {
	return cn.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (cn *conn) ResetSession(ctx context.Context) error {
	return cn.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (cn *conn) IsValid() bool { return cn.Conn.(driver.Validator).IsValid() }

type txn struct {
	driver.Tx
	c  *Counter
	sc *scope // the scope of the context the transaction began with, if any
}

func (t *txn) Commit() error {
	t.c.commits.Add(1)
	if t.sc != nil {
		t.sc.commits.Add(1)
	}
	return t.Tx.Commit()
}

type stmt struct {
	driver.Stmt
	c *Counter
	q string
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.c.note(ctx, s.q, false)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.c.note(ctx, s.q, false)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
