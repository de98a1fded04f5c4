package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"
)

// lockedSession is the session row a turn begins on, with what would stop the turn: the
// user's earlier message with the same client_request_id, in any session ("user message id,
// reply id, session id", space-separated) and a running generation; and with what the
// turn's plan would find (Seen).
type lockedSession struct {
	Session
	Seen
	Duplicate string `db:"duplicate"`
	Running   string `db:"running"`
}

// createTurnTx is one attempt of CreateTurn: on PostgreSQL four round trips (BEGIN, the
// session locked with its conflicts, one statement writing both messages, the first events
// and the session, COMMIT), five with a new session. A new session is inserted first and
// found by the lock like any other; a conflict rolls it back with the rest.
func (s *Store) createTurnTx(ctx context.Context, user, assistant *Message, start TurnStart) error {
	if s.isPostgres() {
		// Prepared before BEGIN: preparing in the transaction would wait for a second
		// connection while holding one (see prepared.go). After the first turn, a map
		// lookup each.
		for _, q := range []string{s.lockQuery(), writeTurnPG} {
			if _, err := s.prepared(ctx, q); err != nil {
				return fmt.Errorf("store: create turn: prepare: %w", err)
			}
		}
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create turn: %w", err)
	}
	defer tx.Rollback()
	if start.NewSession != nil {
		if err := s.insertSession(ctx, tx, start.NewSession); err != nil {
			return fmt.Errorf("store: create turn: %w", err)
		}
	}
	sess, err := s.lockForTurn(ctx, tx, user)
	if err != nil {
		return err
	}
	user.Phase, assistant.Phase = cmpOr(user.Phase, sess.Phase), cmpOr(assistant.Phase, sess.Phase)
	events, changed, err := firstEvents(&sess.Session, sess.Seen, assistant, start)
	if err != nil {
		return err
	}
	stampEvents(events)
	if n := len(events); n > 0 {
		assistant.LastEventID = events[n-1].Seq
	}
	var write *Session
	if changed {
		write = &sess.Session
	}
	if start.Locked != nil {
		start.Locked()
	}
	if err := s.writeTurn(ctx, tx, user, assistant, start.Lease, events, write); err != nil {
		return fmt.Errorf("store: create turn: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create turn: commit: %w", err)
	}
	return nil
}

// lockQuery is lockForTurn's statement: the session with its conflicts and what the plan's
// reads would find (Seen), locked for the turn on PostgreSQL.
func (s *Store) lockQuery() string {
	q := `SELECT ` + prefixed("s.", sessionColumns) + `,
		COALESCE((SELECT u.id || ' ' || COALESCE(a.id, '') || ' ' || u.session_id FROM messages u
			LEFT JOIN messages a ON a.reply_to = u.id AND a.role = 'assistant'
			WHERE u.user_id = s.user_id AND u.role = 'user' AND u.client_request_id = ? AND u.client_request_id <> ''
			ORDER BY a.created_at DESC LIMIT 1), '') AS duplicate,
		COALESCE((SELECT id FROM messages WHERE session_id = s.id AND ` + runningAssistant + ` LIMIT 1), '') AS running,
		EXISTS (SELECT 1 FROM messages WHERE session_id = s.id) AS has_history,
		EXISTS (SELECT 1 FROM strategies WHERE session_id = s.id AND user_id = s.user_id) AS has_strategy,
		EXISTS (SELECT 1 FROM prompts WHERE locale = s.locale AND active = ?) AS has_prompts
		FROM sessions s WHERE s.id = ? AND s.user_id = ?`
	if s.isPostgres() {
		q += ` FOR UPDATE OF s`
	}
	return s.db.Rebind(q)
}

// lockForTurn reads the session for update, with its conflicts, in one statement, and
// turns a conflict into its typed error.
func (s *Store) lockForTurn(ctx context.Context, tx *sqlx.Tx, user *Message) (*lockedSession, error) {
	q := s.lockQuery()
	var row lockedSession
	err := s.getFixedTx(ctx, tx, &row, q, user.ClientRequestID, true, user.SessionID, user.UserID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("store: create turn: %w", err)
	case row.Duplicate != "":
		ids := strings.SplitN(row.Duplicate, " ", 3) // always three: the query joins three ids
		return nil, &DuplicateRequestError{UserMessageID: ids[0], AssistantMessageID: ids[1], SessionID: ids[2]}
	case row.Running != "":
		return nil, &GenerationRunningError{MessageID: row.Running}
	}
	row.utc()
	return &row, nil
}

// firstEvents runs the caller's Prepare on the locked session and returns the first events
// and whether the session changed.
func firstEvents(sess *Session, seen Seen, assistant *Message, start TurnStart) ([]Event, bool, error) {
	events := start.Events
	changed := false
	if start.Prepare != nil {
		before := string(sess.Metadata)
		more, err := start.Prepare(sess, seen)
		if err != nil {
			return nil, false, err
		}
		events, changed = append(append([]Event(nil), events...), more...), string(sess.Metadata) != before
	}
	for i := range events {
		if events[i].MessageID != assistant.ID {
			return nil, false, errors.New("store: create turn: a first event belongs to another message")
		}
	}
	if changed {
		sess.UpdatedAt = now()
	}
	return events, changed, nil
}

// writeTurn writes both messages, the first events and, when changed, the session's
// metadata: on PostgreSQL as one prepared statement (writeTurnPG).
func (s *Store) writeTurn(ctx context.Context, tx *sqlx.Tx, user, assistant *Message, lease Lease, events []Event, sess *Session) error {
	if !s.isPostgres() {
		return s.writeTurnEach(ctx, tx, user, assistant, lease, events, sess)
	}
	args, err := writeTurnArgs(user, assistant, lease, events, sess)
	if err != nil {
		return err
	}
	if st := s.ready(writeTurnPG); st != nil {
		_, err = tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	} else {
		_, err = tx.ExecContext(ctx, writeTurnPG, args...)
	}
	return err
}

// writeTurnPG is a turn's write on PostgreSQL, fixed so that it is prepared once per
// connection and planned once (a text built per turn cost a second round trip and a plan
// each time): the user's message (no lease), the assistant's (claimed for $45 seconds, none
// when 0), the first events as arrays, and the session's metadata when $54.
const writeTurnPG = `WITH m AS (
	INSERT INTO messages (` + messageInsertColumns + `) VALUES
	($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
		NULL),
	($23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44,
		CASE WHEN $45::float8 > 0 THEN now() + make_interval(secs => $45::float8) END)
), e AS (
	INSERT INTO message_events (message_id, seq, name, data, created_at)
	SELECT * FROM unnest($46::text[], $47::bigint[], $48::text[], $49::text[], $50::timestamptz[])
)
UPDATE sessions SET metadata = $51, updated_at = $52 WHERE id = $53 AND $54::bool`

// writeTurnArgs lays a turn's write out as writeTurnPG's parameters.
func writeTurnArgs(user, assistant *Message, lease Lease, events []Event, sess *Session) ([]any, error) {
	user.Owner, assistant.Owner = "", lease.Owner
	args := make([]any, 0, 54)
	for _, m := range []*Message{user, assistant} {
		args = append(args, m.ID, m.SessionID, m.UserID, m.Role, m.Status, m.Content, m.Phase, m.RequestID,
			m.ClientRequestID, nullString(m.ReplyTo), m.ResponseID, m.ToolCalls, m.GenUI,
			m.StatePatch, m.Validation, m.Usage, m.Error, m.Metadata, m.LastEventID, m.CreatedAt,
			dbTimePtr(m.CompletedAt), m.Owner)
	}
	args = append(args, max(lease.TTL.Seconds(), 0))
	evArgs, err := eventArrays(events)
	if err != nil {
		return nil, err
	}
	args = append(args, evArgs...)
	if sess == nil {
		return append(args, JSON(`{}`), now(), "", false), nil
	}
	return append(args, emptyObject(sess.Metadata), sess.UpdatedAt, sess.ID, true), nil
}

// writeTurnEach is writeTurn as separate statements (SQLite: no data-modifying WITH).
func (s *Store) writeTurnEach(ctx context.Context, tx *sqlx.Tx, user, assistant *Message, lease Lease, events []Event, sess *Session) error {
	if err := s.insertMessage(ctx, tx, user, Lease{}); err != nil {
		return err
	}
	if err := s.insertMessage(ctx, tx, assistant, lease); err != nil {
		return err
	}
	if err := s.insertEvents(ctx, tx, events); err != nil {
		return err
	}
	if sess == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, s.db.Rebind(`UPDATE sessions SET metadata = ?, updated_at = ? WHERE id = ?`),
		emptyObject(sess.Metadata), sess.UpdatedAt, sess.ID)
	return err
}

// prefixed qualifies every column of a select list with prefix ("s.").
func prefixed(prefix, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}
