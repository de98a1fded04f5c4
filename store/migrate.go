package store

import (
	"context"
	"database/sql/driver"
	"embed"

	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
)

// migrations holds one folder of numbered SQL files per dialect. Each file is applied once,
// in name order, in its own transaction, and recorded in schema_migrations by its name
// without ".sql".
//
//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// migrateLockKey is the pg_advisory_lock key that serialises migrations across replicas
// starting at the same moment. Any constant works as long as nothing else uses it.
const migrateLockKey int64 = 0x70686173_65666c6f // "phaseflo"

// Migrate brings the schema up to date and returns the versions it applied, in order (none
// when the schema was current, so calling it again is harmless). It logs nothing: the
// caller decides what to report.
//
// On PostgreSQL it holds an advisory lock for the whole run, so two replicas starting
// together apply each file once. On SQLite the writer's BEGIN IMMEDIATE does the same, and
// each file checks schema_migrations inside its own transaction.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	versions, err := s.migrationVersions()
	if err != nil {
		return nil, err
	}
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migrate: %w", err)
	}
	defer conn.Close()
	if s.isPostgres() {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
			return nil, fmt.Errorf("store: migrate: lock: %w", err)
		}
		defer unlockMigrations(ctx, conn)
	}
	if _, err := conn.ExecContext(ctx, s.schemaMigrationsDDL()); err != nil {
		return nil, fmt.Errorf("store: migrate: create schema_migrations: %w", err)
	}
	var applied []string
	for _, v := range versions {
		done, err := s.applyMigration(ctx, conn, v)
		if err != nil {
			return applied, err
		}
		if done {
			applied = append(applied, v)
		}
	}
	return applied, nil
}

// unlockMigrations releases the advisory lock even when ctx has ended. A session lock lives
// as long as the connection, and this connection goes back to the pool, so if the unlock
// fails the connection is marked bad and closed instead.
func unlockMigrations(ctx context.Context, conn *sqlx.Conn) {
	_, err := conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLockKey)
	if err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}

func (s *Store) schemaMigrationsDDL() string {
	if s.isPostgres() {
		return `CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL)`
	}
	return `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TIMESTAMP NOT NULL)`
}

// migrationDir is the embedded folder for the store's dialect.
func (s *Store) migrationDir() string {
	return path.Join("migrations", s.driver)
}

// migrationVersions lists the embedded versions for the store's dialect, sorted.
func (s *Store) migrationVersions() ([]string, error) {
	entries, err := fs.ReadDir(migrations, s.migrationDir())
	if err != nil {
		return nil, fmt.Errorf("store: migrate: %w", err)
	}
	var versions []string
	for _, e := range entries {
		if v, ok := strings.CutSuffix(e.Name(), ".sql"); ok && !e.IsDir() {
			versions = append(versions, v)
		}
	}
	slices.Sort(versions)
	return versions, nil
}

// applyMigration runs one file in a transaction unless schema_migrations already lists it,
// and reports whether it ran.
func (s *Store) applyMigration(ctx context.Context, conn *sqlx.Conn, version string) (bool, error) {
	body, err := fs.ReadFile(migrations, path.Join(s.migrationDir(), version+".sql"))
	if err != nil {
		return false, fmt.Errorf("store: migrate %s: %w", version, err)
	}
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: migrate %s: begin: %w", version, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.GetContext(ctx, &n, s.db.Rebind(`SELECT count(*) FROM schema_migrations WHERE version = ?`), version); err != nil {
		return false, fmt.Errorf("store: migrate %s: %w", version, err)
	}
	if n > 0 {
		return false, nil
	}
	// No arguments: lib/pq then uses the simple query protocol, which accepts several
	// statements in one call; modernc.org/sqlite runs them one after another.
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return false, fmt.Errorf("store: migrate %s: %w", version, err)
	}
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`), version, now()); err != nil {
		return false, fmt.Errorf("store: migrate %s: record: %w", version, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: migrate %s: commit: %w", version, err)
	}
	return true, nil
}
