package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Transition is one phase move of a session with its evidence: why (Reason), which reply
// caused it (MessageID, empty for a manual move) and what showed it (Metadata: fields,
// tool calls). The JSON names are those of GET /api/v1/sessions/{id}/transitions; the
// session id is in the URL, so it is not repeated.
type Transition struct {
	ID        string    `db:"id" json:"id"`
	SessionID string    `db:"session_id" json:"-"`
	FromPhase string    `db:"from_phase" json:"from"`
	ToPhase   string    `db:"to_phase" json:"to"`
	Reason    string    `db:"reason" json:"reason"`
	MessageID string    `db:"message_id" json:"message_id"`
	Metadata  JSON      `db:"metadata" json:"metadata"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
}

// transitionColumns is the select list for Transition. message_id is a nullable foreign
// key, and Transition.MessageID a plain string.
const transitionColumns = `id, session_id, from_phase, to_phase, reason,
	COALESCE(message_id, '') AS message_id, metadata, created_at`

// MovePhase moves a session from t.FromPhase to t.ToPhase and records the move, in one
// transaction, so the session row and its history never disagree.
//
// The session row is written only if its stored phase still equals t.FromPhase (a
// compare-and-set): otherwise the error wraps ErrPhaseChanged, because another request
// moved it meanwhile, and nothing is written. The columns written come from sess: phase
// (which must equal t.ToPhase), status, title (a turn that moves the phase may also name
// the session), artifacts, metadata and previous_response_id (a new phase starts a fresh
// upstream chain, so the orchestrator clears it in the same write); updated_at is stamped
// with the current time, as UpdateSession does. The locale is left alone. The row is matched by sess.ID and
// sess.UserID, so another user's session gives ErrNotFound. The transition gets an id,
// its session and a time (the same instant as updated_at) where empty; a MessageID must
// name an existing message. On success sess.UpdatedAt and the filled fields of t are
// written back. It does not check the phase graph: that is the caller's rule.
func (s *Store) MovePhase(ctx context.Context, sess *Session, t *Transition) error {
	if err := prepareMove(sess, t); err != nil {
		return err
	}
	updatedAt := now()
	if t.CreatedAt.IsZero() {
		t.CreatedAt = updatedAt
	}
	t.CreatedAt = dbTime(t.CreatedAt)
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: move phase: %w", err)
	}
	defer tx.Rollback()
	if err := s.setPhase(ctx, tx, sess, t.FromPhase, updatedAt); err != nil {
		return err
	}
	if err := s.insertTransition(ctx, tx, t); err != nil {
		return fmt.Errorf("store: move phase: record transition: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: move phase: commit: %w", err)
	}
	sess.UpdatedAt = updatedAt
	return nil
}

// prepareMove refuses inconsistent arguments and fills the transition's id and session.
func prepareMove(sess *Session, t *Transition) error {
	switch {
	case sess.ID == "" || sess.UserID == "":
		return errors.New("store: move phase: the session needs an id and a user")
	case t.FromPhase == "" || t.ToPhase == "":
		return errors.New("store: move phase: the transition needs a from and a to phase")
	case sess.Phase != t.ToPhase:
		return fmt.Errorf("store: move phase: session phase %q is not the target %q", sess.Phase, t.ToPhase)
	case t.SessionID != "" && t.SessionID != sess.ID:
		return fmt.Errorf("store: move phase: transition of session %s given for session %s", t.SessionID, sess.ID)
	}
	t.SessionID = sess.ID
	if t.ID == "" {
		t.ID = NewID()
	}
	sess.Artifacts = emptyObject(sess.Artifacts)
	sess.Metadata = emptyObject(sess.Metadata)
	return nil
}

// setPhase is the compare-and-set of MovePhase: it updates the session only while its
// stored phase is from, and says why when no row matched.
func (s *Store) setPhase(ctx context.Context, tx *sqlx.Tx, sess *Session, from string, updatedAt time.Time) error {
	res, err := tx.ExecContext(ctx, s.db.Rebind(`UPDATE sessions SET phase = ?, status = ?, title = ?,
		artifacts = ?, metadata = ?, previous_response_id = ?, updated_at = ?
		WHERE id = ? AND user_id = ? AND phase = ?`),
		sess.Phase, sess.Status, sess.Title, sess.Artifacts, sess.Metadata, sess.PreviousResponseID, updatedAt,
		sess.ID, sess.UserID, from)
	if err != nil {
		return fmt.Errorf("store: move phase: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: move phase: %w", err)
	}
	if n == 1 {
		return nil
	}
	var stored string
	err = tx.GetContext(ctx, &stored, s.db.Rebind(`SELECT phase FROM sessions WHERE id = ? AND user_id = ?`), sess.ID, sess.UserID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("store: move phase: %w", err)
	default:
		return fmt.Errorf("store: move phase from %q: the session is in %q: %w", from, stored, ErrPhaseChanged)
	}
}

// insertTransition writes one phase_transitions row.
func (s *Store) insertTransition(ctx context.Context, e sqlx.ExecerContext, t *Transition) error {
	_, err := e.ExecContext(ctx, s.db.Rebind(`INSERT INTO phase_transitions (id, session_id,
		from_phase, to_phase, reason, message_id, metadata, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		t.ID, t.SessionID, t.FromPhase, t.ToPhase, t.Reason, nullString(t.MessageID), t.Metadata, t.CreatedAt)
	return err
}

// ListTransitions returns the phase moves of a session, oldest first, or ErrNotFound when
// the session is not userID's (an empty list means an owned session that never moved).
func (s *Store) ListTransitions(ctx context.Context, sessionID, userID string) ([]Transition, error) {
	if err := s.owned(ctx, tableSessions, sessionID, userID); err != nil {
		return nil, err
	}
	var out []Transition
	err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT `+transitionColumns+` FROM phase_transitions
		WHERE session_id = ? ORDER BY created_at, id`), sessionID)
	if err != nil {
		return nil, fmt.Errorf("store: list transitions: %w", err)
	}
	for i := range out {
		out[i].CreatedAt = out[i].CreatedAt.UTC()
	}
	return out, nil
}
