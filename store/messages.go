package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// messageColumns is the select list for Message. reply_to is NULL on user messages (it is
// a foreign key, so it cannot be ""), and Message.ReplyTo is a plain string.
const messageColumns = `id, session_id, user_id, role, status, content, phase, request_id,
	client_request_id, COALESCE(reply_to, '') AS reply_to, response_id, tool_calls, genui,
	state_patch, validation, usage, error, metadata, last_event_id, created_at, completed_at, owner`

// insertMessage writes every column of m. An assistant message is claimed by lease (its
// owner and lease_until); a zero lease leaves it unowned, so any replica's sweep may end it.
func (s *Store) insertMessage(ctx context.Context, e sqlx.ExecerContext, m *Message, lease Lease) error {
	var b strings.Builder
	args := s.messagesInsert(&b, nil, []*Message{m}, []Lease{lease})
	_, err := e.ExecContext(ctx, s.db.Rebind(b.String()), args...)
	return err
}

// messageInsertColumns is the column list messagesInsert writes.
const messageInsertColumns = `id, session_id, user_id, role, status, content, phase, request_id,
	client_request_id, reply_to, response_id, tool_calls, genui, state_patch, validation, usage,
	error, metadata, last_event_id, created_at, completed_at, owner, lease_until`

// messagesInsert writes "INSERT INTO messages … VALUES (…), …" for msgs (each claimed by its
// lease) into b with ? placeholders, and returns args with the values appended.
func (s *Store) messagesInsert(b *strings.Builder, args []any, msgs []*Message, leases []Lease) []any {
	b.WriteString(`INSERT INTO messages (` + messageInsertColumns + `) VALUES `)
	for i, m := range msgs {
		m.Owner = leases[i].Owner
		until, untilArgs := s.leaseUntil(leases[i].TTL)
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + until + `)`)
		args = append(args, m.ID, m.SessionID, m.UserID, m.Role, m.Status, m.Content, m.Phase, m.RequestID,
			m.ClientRequestID, nullString(m.ReplyTo), m.ResponseID, m.ToolCalls, m.GenUI,
			m.StatePatch, m.Validation, m.Usage, m.Error, m.Metadata, m.LastEventID, m.CreatedAt,
			dbTimePtr(m.CompletedAt), m.Owner)
		args = append(args, untilArgs...)
	}
	return args
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

// RunningMessage returns the assistant message being generated in sessionID (pending or
// streaming), and ErrNotFound when none is or the session is not userID's.
func (s *Store) RunningMessage(ctx context.Context, sessionID, userID string) (*Message, error) {
	out, err := s.selectMessages(ctx, `WHERE session_id = ? AND user_id = ? AND role = ? AND status IN (?, ?)
		ORDER BY created_at DESC, id DESC LIMIT 1`, sessionID, userID, RoleAssistant, StatusPending, StatusStreaming)
	if err != nil {
		return nil, fmt.Errorf("store: running message: %w", err)
	}
	if len(out) == 0 {
		return nil, ErrNotFound
	}
	return &out[0], nil
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
	if err := s.selectFixed(ctx, &out, `SELECT `+messageColumns+` FROM messages `+where, args...); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].utc()
	}
	return out, nil
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
