package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// createTurnAttempts bounds the retries of CreateTurn when a unique index fired but the
// conflicting row was gone by the time it was looked up (it finished in between).
const createTurnAttempts = 3

// CreateTurn stores one chat turn: the user message and the assistant message that will
// answer it (status pending), in one transaction, so a turn never exists half. It fills
// ids, roles, times (the assistant's one microsecond after the user's, so the pair sorts
// in order), the assistant's session, user, phase and request ids from the user message,
// and links the pair: the assistant's ReplyTo is the user message id and it carries a copy
// of the client_request_id.
//
// Errors, checked in this order:
//   - ErrNotFound when the session does not exist or is not user.UserID's;
//   - *DuplicateRequestError when user.ClientRequestID is set and an earlier user message
//     of the session has it: the error names that message and its reply, and nothing is
//     written (the API answers the earlier turn again);
//   - *GenerationRunningError when the session already has a pending or streaming
//     assistant message.
//
// The checks run inside the transaction with the session row locked (PostgreSQL, FOR
// UPDATE) or the write lock held (SQLite, BEGIN IMMEDIATE on the one writer connection);
// the partial unique indexes stay as the last line, and their violations map to the same
// errors.
func (s *Store) CreateTurn(ctx context.Context, user, assistant *Message) error {
	if err := prepareTurn(user, assistant); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := s.createTurnTx(ctx, user, assistant)
		if idx, unique := uniqueViolation(err); !unique || (idx != idxOneRunning && idx != idxClientRequestID) {
			return err
		}
		// A concurrent turn got past the checks first. Name it.
		if conflict := s.turnConflict(ctx, s.db, user.SessionID, user.ClientRequestID); conflict != nil {
			return conflict
		}
		if attempt == createTurnAttempts {
			return err
		}
	}
}

// prepareTurn fills the defaults described at CreateTurn and refuses inconsistent pairs.
func prepareTurn(user, assistant *Message) error {
	if user.SessionID == "" || user.UserID == "" {
		return errors.New("store: create turn: the user message needs a session and a user")
	}
	if user.ID == "" {
		user.ID = newID()
	}
	if assistant.ID == "" {
		assistant.ID = newID()
	}
	user.Role = cmpOr(user.Role, "user")
	assistant.Role = cmpOr(assistant.Role, "assistant")
	user.Status = cmpOr(user.Status, StatusCompleted)
	assistant.Status = cmpOr(assistant.Status, StatusPending)
	assistant.SessionID = cmpOr(assistant.SessionID, user.SessionID)
	assistant.UserID = cmpOr(assistant.UserID, user.UserID)
	assistant.Phase = cmpOr(assistant.Phase, user.Phase)
	assistant.RequestID = cmpOr(assistant.RequestID, user.RequestID)
	assistant.ClientRequestID = user.ClientRequestID
	assistant.ReplyTo = user.ID
	switch {
	case user.Role != "user" || assistant.Role != "assistant":
		return fmt.Errorf("store: create turn: roles %q and %q, want user and assistant", user.Role, assistant.Role)
	case assistant.SessionID != user.SessionID || assistant.UserID != user.UserID:
		return errors.New("store: create turn: the two messages belong to different sessions or users")
	case !isRunning(assistant.Status):
		return fmt.Errorf("store: create turn: assistant status %q, want pending or streaming", assistant.Status)
	}
	user.CreatedAt = orNow(user.CreatedAt)
	if assistant.CreatedAt.IsZero() || !assistant.CreatedAt.After(user.CreatedAt) {
		assistant.CreatedAt = user.CreatedAt.Add(time.Microsecond)
	}
	assistant.CreatedAt = dbTime(assistant.CreatedAt)
	return nil
}

func (s *Store) createTurnTx(ctx context.Context, user, assistant *Message) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create turn: %w", err)
	}
	defer tx.Rollback()
	lock := `SELECT id FROM sessions WHERE id = ? AND user_id = ?`
	if s.isPostgres() {
		lock += ` FOR UPDATE`
	}
	var id string
	err = tx.GetContext(ctx, &id, s.db.Rebind(lock), user.SessionID, user.UserID)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("store: create turn: %w", err)
	}
	if err := s.turnConflict(ctx, tx, user.SessionID, user.ClientRequestID); err != nil {
		return err
	}
	for _, m := range []*Message{user, assistant} {
		if err := s.insertMessage(ctx, tx, m); err != nil {
			return fmt.Errorf("store: create turn: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create turn: commit: %w", err)
	}
	return nil
}

// turnConflict returns a *DuplicateRequestError, a *GenerationRunningError, another error
// when the look-up failed, or nil when a new turn may start.
func (s *Store) turnConflict(ctx context.Context, q sqlx.QueryerContext, sessionID, clientRequestID string) error {
	if clientRequestID != "" {
		var dup DuplicateRequestError
		err := q.QueryRowxContext(ctx, s.db.Rebind(`SELECT u.id, COALESCE(a.id, '') FROM messages u
			LEFT JOIN messages a ON a.reply_to = u.id AND a.role = 'assistant'
			WHERE u.session_id = ? AND u.role = 'user' AND u.client_request_id = ?
			ORDER BY a.created_at DESC LIMIT 1`), sessionID, clientRequestID).Scan(&dup.UserMessageID, &dup.AssistantMessageID)
		switch {
		case err == nil:
			return &dup
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("store: create turn: find client_request_id: %w", err)
		}
	}
	var running GenerationRunningError
	err := q.QueryRowxContext(ctx, s.db.Rebind(`SELECT id FROM messages
		WHERE session_id = ? AND role = 'assistant' AND status IN ('pending', 'streaming')
		LIMIT 1`), sessionID).Scan(&running.MessageID)
	switch {
	case err == nil:
		return &running
	case errors.Is(err, sql.ErrNoRows):
		return nil
	default:
		return fmt.Errorf("store: create turn: find running generation: %w", err)
	}
}

// cmpOr returns v, or def when v is empty.
func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// isRunning reports whether an assistant message with this status is still being generated.
func isRunning(status string) bool {
	return status == StatusPending || status == StatusStreaming
}

// isTerminal reports whether status ends a message.
func isTerminal(status string) bool {
	switch status {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusInterrupted:
		return true
	}
	return false
}
