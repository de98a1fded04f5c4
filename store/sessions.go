package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// sessionColumns is the select list for Session; sqlx needs every column to have a field.
const sessionColumns = `id, user_id, title, locale, phase, status, artifacts, metadata, previous_response_id, created_at, updated_at`

// CreateSession inserts sess. It fills what the caller left empty: the id (a UUIDv7), the
// times (now) and the artifacts and metadata (an empty object), and writes them back into
// sess so the caller holds exactly what was stored.
func (s *Store) CreateSession(ctx context.Context, sess *Session) error {
	if err := s.insertSession(ctx, s.db, sess); err != nil {
		return fmt.Errorf("store: create session: %w", err)
	}
	if s.isPostgres() {
		s.fresh.put(sess, time.Now())
	}
	return nil
}

// CreateSessionIfAbsent inserts sess, filled as CreateSession fills it, unless a session
// with its id exists; false when one did (sess is then not the stored session).
func (s *Store) CreateSessionIfAbsent(ctx context.Context, sess *Session) (bool, error) {
	if err := fillSession(sess); err != nil {
		return false, fmt.Errorf("store: create session: %w", err)
	}
	res, err := s.execFixed(ctx, s.db, `INSERT INTO sessions (`+sessionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		sess.ID, sess.UserID, sess.Title, sess.Locale, sess.Phase, sess.Status,
		sess.Artifacts, sess.Metadata, sess.PreviousResponseID, sess.CreatedAt, sess.UpdatedAt)
	if err != nil {
		return false, fmt.Errorf("store: create session: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: create session: %w", err)
	}
	if n == 1 && s.isPostgres() {
		s.fresh.put(sess, time.Now())
	}
	return n == 1, nil
}

// insertSession is CreateSession on e (the pool, or CreateTurn's transaction).
func (s *Store) insertSession(ctx context.Context, e sqlx.ExecerContext, sess *Session) error {
	if err := fillSession(sess); err != nil {
		return err
	}
	_, err := s.execFixed(ctx, e, `INSERT INTO sessions (`+sessionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sess.ID, sess.UserID, sess.Title, sess.Locale, sess.Phase, sess.Status,
		sess.Artifacts, sess.Metadata, sess.PreviousResponseID, sess.CreatedAt, sess.UpdatedAt)
	return err
}

// fillSession fills what a new session's creator left empty, as it is stored: the id (a
// UUIDv7), the times (now, to the microsecond) and the artifacts and metadata (an empty
// object). Filling a filled session changes nothing.
func fillSession(sess *Session) error {
	if sess.UserID == "" {
		return errors.New("no user")
	}
	if sess.ID == "" {
		sess.ID = NewID()
	}
	sess.CreatedAt = orNow(sess.CreatedAt)
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	sess.UpdatedAt = dbTime(sess.UpdatedAt)
	sess.Artifacts = emptyObject(sess.Artifacts)
	sess.Metadata = emptyObject(sess.Metadata)
	return nil
}

// GetSession returns the session id if it belongs to userID, and ErrNotFound otherwise.
func (s *Store) GetSession(ctx context.Context, id, userID string) (*Session, error) {
	var sess Session
	err := s.rdb.GetContext(ctx, &sess, s.rdb.Rebind(`SELECT `+sessionColumns+` FROM sessions WHERE id = ? AND user_id = ?`), id, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get session: %w", err)
	}
	sess.utc()
	return &sess, nil
}

// ListSessions returns userID's sessions, newest first (the order the session list shows).
func (s *Store) ListSessions(ctx context.Context, userID string) ([]Session, error) {
	var out []Session
	err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT `+sessionColumns+` FROM sessions
		WHERE user_id = ? ORDER BY created_at DESC, id DESC`), userID)
	if err != nil {
		return nil, fmt.Errorf("store: list sessions: %w", err)
	}
	for i := range out {
		out[i].utc()
	}
	return out, nil
}

// UpdateSession writes the mutable fields of sess (title, locale, phase, status, artifacts,
// metadata, previous_response_id) and stamps UpdatedAt with the current time. The row is
// matched by id and user id, so another user's session gives ErrNotFound. The last writer
// wins: callers serialise updates of one session (the orchestrator does so per turn).
func (s *Store) UpdateSession(ctx context.Context, sess *Session) error {
	return s.updateSession(ctx, s.db, sess)
}

// updateSession is UpdateSession on e (the pool or a transaction): sess's mutable fields
// where its row matches.
func (s *Store) updateSession(ctx context.Context, e sqlx.ExecerContext, sess *Session) error {
	args := append(sess.written(now()), sess.UpdatedAt, sess.ID, sess.UserID)
	res, err := s.execFixed(ctx, e, `UPDATE sessions SET title = ?, locale = ?, phase = ?,
		status = ?, artifacts = ?, metadata = ?, previous_response_id = ?, updated_at = ?
		WHERE id = ? AND user_id = ?`, args...)
	if err != nil {
		return fmt.Errorf("store: update session: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: update session: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// written stamps sess as written at at, fills its empty JSON columns, and returns the
// mutable fields a session write sets, in the order updateSession names them (title,
// locale, phase, status, artifacts, metadata, previous_response_id). A settling commit
// stamps its settlements with it too (prepareSettlements).
func (sess *Session) written(at time.Time) []any {
	sess.UpdatedAt = at
	sess.Artifacts, sess.Metadata = emptyObject(sess.Artifacts), emptyObject(sess.Metadata)
	return []any{sess.Title, sess.Locale, sess.Phase, sess.Status, sess.Artifacts, sess.Metadata, sess.PreviousResponseID}
}

// utc puts the times of a scanned session in UTC: lib/pq returns the server's offset and
// SQLite returns UTC, and callers should not see the difference.
func (sess *Session) utc() {
	sess.CreatedAt = sess.CreatedAt.UTC()
	sess.UpdatedAt = sess.UpdatedAt.UTC()
}
