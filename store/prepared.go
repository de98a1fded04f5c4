package store

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
)

// The turn's fixed reads run as prepared statements on PostgreSQL. lib/pq sends a query
// with arguments as two round trips (parse, then bind and execute) and PostgreSQL parses and
// plans it every time; a statement prepared once per connection is one round trip and is
// planned once. On SQLite a query is in-process, and they run as they are.

// selectFixed is SelectContext on the read pool for q, a fixed text with ? placeholders.
func (s *Store) selectFixed(ctx context.Context, dest any, q string, args ...any) error {
	if !s.isPostgres() {
		return s.rdb.SelectContext(ctx, dest, s.rdb.Rebind(q), args...)
	}
	st, err := s.prepared(ctx, s.db.Rebind(q))
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
	st, err := s.prepared(ctx, s.db.Rebind(q))
	if err != nil {
		return err
	}
	return (&sqlx.Stmt{Stmt: st, Mapper: s.db.Mapper}).GetContext(ctx, dest, args...)
}

// getFixedTx is GetContext in tx for q, a fixed text with ? placeholders.
func (s *Store) getFixedTx(ctx context.Context, tx *sqlx.Tx, dest any, q string, args ...any) error {
	if !s.isPostgres() {
		return tx.GetContext(ctx, dest, tx.Rebind(q), args...)
	}
	st, err := s.prepared(ctx, s.db.Rebind(q))
	if err != nil {
		return err
	}
	return tx.StmtxContext(ctx, &sqlx.Stmt{Stmt: st, Mapper: s.db.Mapper}).GetContext(ctx, dest, args...)
}

// execFixed is ExecContext on e (the pool or a transaction) for q, a fixed text with ?
// placeholders.
func (s *Store) execFixed(ctx context.Context, e sqlx.ExecerContext, q string, args ...any) (sql.Result, error) {
	if !s.isPostgres() {
		return e.ExecContext(ctx, s.db.Rebind(q), args...)
	}
	st, err := s.prepared(ctx, s.db.Rebind(q))
	if err != nil {
		return nil, err
	}
	if tx, ok := e.(*sqlx.Tx); ok {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return st.ExecContext(ctx, args...)
}
