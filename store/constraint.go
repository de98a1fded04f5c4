package store

import (
	"errors"
	"strings"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Names of the unique indexes the store turns into typed errors. They are the PostgreSQL
// index names from migrations/postgres (0001_init.sql; the client_request_id index is
// per user since 0007_client_request_per_user.sql).
const (
	idxOneRunning      = "messages_one_running_idx"
	idxClientRequestID = "messages_client_request_id_idx"
)

// uniqueViolation reports which unique index or constraint err violated ("" and false when
// err is no unique violation). PostgreSQL names the index (SQLSTATE 23505, Constraint).
// SQLite names only the columns ("UNIQUE constraint failed: messages.session_id"), so the
// column list is mapped back to the index that covers it.
func uniqueViolation(err error) (string, bool) {
	if pe := pq.As(err, pqerror.UniqueViolation); pe != nil {
		return pe.Constraint, true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return "", false
	}
	if c := se.Code(); c != sqlite3.SQLITE_CONSTRAINT_UNIQUE && c != sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
		return "", false
	}
	return sqliteIndexName(se.Error()), true
}

// sqliteIndexName maps SQLite's "UNIQUE constraint failed: t.a, t.b" text to an index name.
// Longer column lists are tested first because they contain the shorter ones.
func sqliteIndexName(msg string) string {
	_, cols, ok := strings.Cut(msg, "UNIQUE constraint failed: ")
	if !ok {
		return ""
	}
	cols, _, _ = strings.Cut(cols, " (") // modernc appends the code: " (2067)"
	switch strings.TrimSpace(cols) {
	case "messages.user_id, messages.client_request_id", "messages.session_id, messages.client_request_id":
		return idxClientRequestID
	case "messages.session_id":
		return idxOneRunning
	default:
		return strings.TrimSpace(cols)
	}
}
