package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// ErrNotOwner is returned by SettleTurn when the message is no longer running under the
// given owner: another replica took the turn over (its lease expired) or it already ended.
// Nothing was written.
var ErrNotOwner = errors.New("store: the message is not running under this owner")

// Settlement is everything an accepted turn writes besides its events (docs/turn.md
// step 4). A completed turn's settlement without a phase move rides on its terminal event
// (Message.Settlement) and is written by the commit that finishes the message
// ([Store.CommitEvents]); one with a move is written by [Store.SettleTurn], in one
// transaction, before the events that report the move. The turn's MCP calls and upstream
// traces are not here: every turn records them, whatever its outcome, with its events
// ([TurnRecords], Event.Traces).
type Settlement struct {
	// MessageID and Owner fence the write: it happens only while the message is running
	// and owned by Owner (the lease rules of package orchestration/lease). A settlement on
	// a terminal event is fenced by its commit and needs neither.
	MessageID string
	Owner     string
	// Session is the session after the turn; all its mutable fields are written (see
	// UpdateSession). Required.
	Session *Session
	// Move, when set, is the phase move the turn made: the session's phase changes only if
	// it is still Move.FromPhase (else ErrPhaseChanged), and the transition row is written.
	Move *Transition
	// Strategy, when set, is created or updated as UpsertStrategy describes (an id is drawn
	// when it has none); the stored row is written back by SettleTurn.
	Strategy *Strategy
}

// SettleTurn writes st in one transaction: the strategy, the session (with its phase move
// and transition), and the fence, checked last. A turn that lost its lease writes none of it
// (ErrNotOwner), and another user's strategy refuses all of it (ErrNotFound).
func (s *Store) SettleTurn(ctx context.Context, st *Settlement) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: settle turn: %w", err)
	}
	defer tx.Rollback()
	if st.Strategy != nil {
		if st.Strategy.ID == "" {
			st.Strategy.ID = NewID()
		}
		stored, err := s.upsertStrategyTx(ctx, tx, st.Strategy)
		if err != nil {
			return err
		}
		*st.Strategy = *stored
	}
	if err := s.settleSession(ctx, tx, st); err != nil {
		return err
	}
	// The fence comes last: the message row it locks is the one the event log's group
	// commits update, and a lock taken first was held through every statement above, so
	// a group commit of other turns' events that included this message's last deltas
	// waited for all of them. Checked last, it still holds until COMMIT, so the writes
	// above stand or fall with it.
	if err := s.fence(ctx, tx, st.MessageID, st.Owner); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: settle turn: commit: %w", err)
	}
	return nil
}

// fenced is the condition on a message row that a turn's writes need: still running and
// owned by the writer (arguments: message id, owner).
const fenced = `id = ? AND owner = ? AND ` + runningAssistant

// fenceQuery selects the fenced message row, locking it on PostgreSQL against any change
// of its owner or status until the transaction ends (FOR NO KEY UPDATE: the weakest lock
// that conflicts with an UPDATE, so inserts of rows referring to the message never wait).
func (s *Store) fenceQuery() string {
	q := `SELECT 1 FROM messages WHERE ` + fenced
	if s.isPostgres() {
		q += ` FOR NO KEY UPDATE`
	}
	return q
}

// fence locks the message row and checks it is owner's running message.
func (s *Store) fence(ctx context.Context, tx *sqlx.Tx, messageID, owner string) error {
	var one int
	err := tx.GetContext(ctx, &one, s.db.Rebind(s.fenceQuery()), messageID, owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("store: settle turn %s: %w", messageID, ErrNotOwner)
	case err != nil:
		return fmt.Errorf("store: settle turn: %w", err)
	}
	return nil
}

// settleSession writes the session, through the phase compare-and-set when it moved.
func (s *Store) settleSession(ctx context.Context, tx *sqlx.Tx, st *Settlement) error {
	sess := st.Session
	if sess == nil {
		return nil
	}
	if st.Move != nil {
		if err := prepareMove(sess, st.Move); err != nil {
			return err
		}
		at := now()
		if st.Move.CreatedAt.IsZero() {
			st.Move.CreatedAt = at
		}
		st.Move.CreatedAt = dbTime(st.Move.CreatedAt)
		if err := s.setPhase(ctx, tx, sess, st.Move.FromPhase, at); err != nil {
			return err
		}
		sess.UpdatedAt = at
		if err := s.insertTransition(ctx, tx, st.Move); err != nil {
			return fmt.Errorf("store: settle turn: record transition: %w", err)
		}
		return nil
	}
	return s.updateSession(ctx, tx, sess)
}
