package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
)

// messageColumns is the select list for Message. reply_to is NULL on user messages (it is
// a foreign key, so it cannot be ""), and Message.ReplyTo is a plain string.
const messageColumns = `id, session_id, user_id, role, status, content, phase, request_id,
	client_request_id, COALESCE(reply_to, '') AS reply_to, response_id, tool_calls, genui,
	state_patch, validation, usage, error, metadata, last_event_id, created_at, completed_at`

// insertMessage writes every column of m.
func (s *Store) insertMessage(ctx context.Context, e sqlx.ExecerContext, m *Message) error {
	_, err := e.ExecContext(ctx, s.db.Rebind(`INSERT INTO messages (id, session_id, user_id, role,
		status, content, phase, request_id, client_request_id, reply_to, response_id, tool_calls,
		genui, state_patch, validation, usage, error, metadata, last_event_id, created_at,
		completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		m.ID, m.SessionID, m.UserID, m.Role, m.Status, m.Content, m.Phase, m.RequestID,
		m.ClientRequestID, nullString(m.ReplyTo), m.ResponseID, m.ToolCalls, m.GenUI,
		m.StatePatch, m.Validation, m.Usage, m.Error, m.Metadata, m.LastEventID, m.CreatedAt,
		dbTimePtr(m.CompletedAt))
	return err
}

// GetMessage returns the message id if it belongs to userID, and ErrNotFound otherwise.
func (s *Store) GetMessage(ctx context.Context, id, userID string) (*Message, error) {
	var m Message
	err := s.rdb.GetContext(ctx, &m, s.rdb.Rebind(`SELECT `+messageColumns+` FROM messages WHERE id = ? AND user_id = ?`), id, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get message: %w", err)
	}
	m.utc()
	return &m, nil
}

// ListMessages returns the messages of a session, oldest first, or ErrNotFound when the
// session is not userID's (an empty list means an owned session without messages).
func (s *Store) ListMessages(ctx context.Context, sessionID, userID string) ([]Message, error) {
	var n int
	err := s.rdb.GetContext(ctx, &n, s.rdb.Rebind(`SELECT count(*) FROM sessions WHERE id = ? AND user_id = ?`), sessionID, userID)
	if err != nil {
		return nil, fmt.Errorf("store: list messages: %w", err)
	}
	if n == 0 {
		return nil, ErrNotFound
	}
	out, err := s.selectMessages(ctx, `WHERE session_id = ? ORDER BY created_at, id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("store: list messages: %w", err)
	}
	return out, nil
}

// SetMessageStatus moves a message to status (the stream handler marks it streaming; start-up
// recovery marks orphans interrupted). A terminal status also stamps completed_at unless it
// is already set. ErrNotFound when no message has that id; *GenerationRunningError when
// moving an assistant message back to pending or streaming while another one of its
// session runs.
func (s *Store) SetMessageStatus(ctx context.Context, id, status string) error {
	var res sql.Result
	var err error
	if isTerminal(status) {
		res, err = s.db.ExecContext(ctx, s.db.Rebind(`UPDATE messages SET status = ?,
			completed_at = COALESCE(completed_at, ?) WHERE id = ?`), status, now(), id)
	} else {
		res, err = s.db.ExecContext(ctx, s.db.Rebind(`UPDATE messages SET status = ? WHERE id = ?`), status, id)
	}
	if idx, ok := uniqueViolation(err); ok && idx == idxOneRunning {
		return s.runningConflict(ctx, id, err)
	}
	if err != nil {
		return fmt.Errorf("store: set message status: %w", err)
	}
	return oneRow(res, "set message status")
}

// runningConflict names the generation that kept message id from running again; cause is
// returned (wrapped) when it cannot be found.
func (s *Store) runningConflict(ctx context.Context, id string, cause error) error {
	var sessionID string
	err := s.db.GetContext(ctx, &sessionID, s.db.Rebind(`SELECT session_id FROM messages WHERE id = ?`), id)
	if err == nil {
		if conflict := s.turnConflict(ctx, s.db, sessionID, ""); conflict != nil {
			return conflict
		}
	}
	return fmt.Errorf("store: set message status: %w", cause)
}

// FinishMessage writes the outcome of a generation: content, status (which must be terminal),
// response id, the JSON columns, last_event_id and completed_at (now when nil, written back
// into m). last_event_id never moves backwards: the stored value is the larger of the two,
// since AppendEvents advances it too. ErrNotFound when no message has m.ID.
//
// Callers should pass a context that outlives the client request (context.WithoutCancel
// plus a timeout), so a disconnect does not lose the reply.
func (s *Store) FinishMessage(ctx context.Context, m *Message) error {
	if !isTerminal(m.Status) {
		return fmt.Errorf("store: finish message: status %q is not terminal", m.Status)
	}
	if m.CompletedAt == nil {
		t := now()
		m.CompletedAt = &t
	}
	m.CompletedAt = dbTimePtr(m.CompletedAt)
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE messages SET content = ?, status = ?,
		response_id = ?, tool_calls = ?, genui = ?, state_patch = ?, validation = ?, usage = ?,
		error = ?, metadata = ?, last_event_id = `+s.greatest("last_event_id", "?")+`,
		completed_at = ? WHERE id = ?`),
		m.Content, m.Status, m.ResponseID, m.ToolCalls, m.GenUI, m.StatePatch, m.Validation,
		m.Usage, m.Error, m.Metadata, m.LastEventID, m.CompletedAt, m.ID)
	if err != nil {
		return fmt.Errorf("store: finish message: %w", err)
	}
	return oneRow(res, "finish message")
}

// ListUnfinishedMessages returns the assistant messages still pending or streaming, oldest
// first. At start-up these are generations whose server died: recovery marks them
// interrupted. With several replicas, only messages no live replica owns are orphans; the
// store cannot tell, the caller must.
func (s *Store) ListUnfinishedMessages(ctx context.Context) ([]Message, error) {
	out, err := s.selectMessages(ctx, `WHERE role = 'assistant' AND status IN ('pending', 'streaming')
		ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("store: list unfinished messages: %w", err)
	}
	return out, nil
}

// LatestMessages returns the last n completed messages of a session, oldest first: the
// conversation history sent to the model. Failed, cancelled and running messages are left
// out. It does not check ownership; the caller has already resolved the session.
func (s *Store) LatestMessages(ctx context.Context, sessionID string, n int) ([]Message, error) {
	if n <= 0 {
		return nil, nil
	}
	out, err := s.selectMessages(ctx, `WHERE session_id = ? AND status = 'completed'
		ORDER BY created_at DESC, id DESC LIMIT ?`, sessionID, n)
	if err != nil {
		return nil, fmt.Errorf("store: latest messages: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// selectMessages runs SELECT messageColumns FROM messages <where> on the read pool.
func (s *Store) selectMessages(ctx context.Context, where string, args ...any) ([]Message, error) {
	var out []Message
	if err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT `+messageColumns+` FROM messages `+where), args...); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].utc()
	}
	return out, nil
}

// greatest is the two-argument maximum: GREATEST on PostgreSQL, the scalar MAX on SQLite.
func (s *Store) greatest(a, b string) string {
	if s.isPostgres() {
		return "GREATEST(" + a + ", " + b + ")"
	}
	return "MAX(" + a + ", " + b + ")"
}

// utc puts the times of a scanned message in UTC (see Session.utc).
func (m *Message) utc() {
	m.CreatedAt = m.CreatedAt.UTC()
	if m.CompletedAt != nil {
		t := m.CompletedAt.UTC()
		m.CompletedAt = &t
	}
}

// dbTimePtr is dbTime for an optional time.
func dbTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := dbTime(*t)
	return &v
}
