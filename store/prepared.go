package store

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
)

// The turn's fixed statements run prepared on PostgreSQL. lib/pq sends a query with
// arguments as two round trips (parse, then bind and execute) and PostgreSQL parses and
// plans it every time; a statement prepared once per connection is one round trip and is
// planned once. On SQLite every connection keeps the statements it runs prepared by itself
// (stmtCache), so they run as they are.
//
// A statement is prepared on the pool only by a caller that holds no connection: preparing
// takes a connection of its own, and a transaction that waited for one while holding
// another would, with as many such transactions as the pool has connections, wait forever
// (a cold replica's first burst of turns did exactly that). So transactions use a statement
// only once it is ready (see ready), and the paths that need one in a transaction prepare it
// before they begin.

// prepared returns the statement q prepared on the pool, preparing it on first use (after
// the migrations have made its tables). database/sql prepares it again on each connection
// as needed. No lock is held while it waits for the database: two first uses may both
// prepare, and the second closes its copy, after letting go of the lock. Closing waits
// for every connection the copy was prepared on to finish what it is running, and one of
// them may be a transaction waiting for a row another transaction holds while it asks
// ready for its next statement: closing under the lock once deadlocked a burst of turns
// (TestCreateTurnConcurrent).
func (s *Store) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	if st := s.ready(q); st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	kept := s.keep(q, st)
	if kept != st {
		st.Close()
	}
	return kept, nil
}

// keep stores st as the statement q unless another first use stored one already, and
// returns the one stored.
func (s *Store) keep(q string, st *sql.Stmt) *sql.Stmt {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if old, ok := s.stmts[q]; ok {
		return old
	}
	if s.stmts == nil {
		s.stmts = make(map[string]*sql.Stmt)
	}
	s.stmts[q] = st
	return st
}

// ready returns the statement q if it has been prepared on the pool, else nil. It never
// waits for the database (the lock is held only around the map), so a transaction may
// call it.
func (s *Store) ready(q string) *sql.Stmt {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	return s.stmts[q]
}

// selectFixed is SelectContext on the read pool for q, a fixed text with ? placeholders.
func (s *Store) selectFixed(ctx context.Context, dest any, q string, args ...any) error {
	if !s.isPostgres() {
		return s.rdb.SelectContext(ctx, dest, s.rdb.Rebind(q), args...)
	}
	st, err := s.prepared(ctx, s.rebound(q))
	if err != nil {
		return err
	}
	return (&sqlx.Stmt{Stmt: st, Mapper: s.db.Mapper}).SelectContext(ctx, dest, args...)
}

// getFixed is GetContext on the read pool for q, a fixed text with ? placeholders.
func (s *Store) getFixed(ctx context.Context, dest any, q string, args ...any) error {
	if !s.isPostgres() {
		return s.rdb.GetContext(ctx, dest, s.rdb.Rebind(q), args...)
	}
	st, err := s.prepared(ctx, s.rebound(q))
	if err != nil {
		return err
	}
	return (&sqlx.Stmt{Stmt: st, Mapper: s.db.Mapper}).GetContext(ctx, dest, args...)
}

// execFixed is ExecContext on e (the pool or a transaction) for q, a fixed text with ?
// placeholders. On the pool it prepares q on first use; in a transaction it uses q prepared
// when it is ready and runs it plain when it is not.
func (s *Store) execFixed(ctx context.Context, e sqlx.ExecerContext, q string, args ...any) (sql.Result, error) {
	q = s.rebound(q)
	if !s.isPostgres() {
		return e.ExecContext(ctx, q, args...)
	}
	if tx, ok := e.(*sqlx.Tx); ok {
		if st := s.ready(q); st != nil {
			return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
		}
		return tx.ExecContext(ctx, q, args...)
	}
	st, err := s.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// rebound is q, a fixed text with ? placeholders, in the database's placeholders: on
// PostgreSQL $1, $2…, worked out on q's first use and kept (sqlx.Rebind builds a new text
// on every call); on SQLite q itself. Only fixed texts may come here, so what it keeps is
// bounded by the statements the code holds.
func (s *Store) rebound(q string) string {
	if !s.isPostgres() {
		return q
	}
	if r, ok := s.rebinds.Load(q); ok {
		return r.(string)
	}
	r := s.db.Rebind(q)
	s.rebinds.Store(q, r)
	return r
}
