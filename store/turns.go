package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// createTurnAttempts bounds the retries of CreateTurn when it lost a race (lostRace) but
// found no conflict on its next read (the other turn finished in between).
const createTurnAttempts = 3

// CreateTurn stores one chat turn: the user message and the assistant message that will
// answer it (status pending), claimed by start.Lease, with the first events of its log
// (start.Events, e.g. status queued), atomically, so a turn never exists half and
// its log never starts late. It fills
// ids, roles, times (the assistant's one microsecond after the user's, so the pair sorts
// in order), the assistant's session, user, phase and request ids from the user message,
// and links the pair: the assistant's ReplyTo is the user message id and it carries a copy
// of the client_request_id.
//
// With start.NewSession the session is created in the same transaction (user.SessionID
// must name it); otherwise it must exist.
//
// Errors, checked in this order:
//   - ErrNotFound when the session does not exist or is not user.UserID's;
//   - *DuplicateRequestError when user.ClientRequestID is set and an earlier user message
//     of the same user has it, in any session: the error names that message, its reply
//     and its session, and nothing is written (not the new session either: the API
//     answers the earlier turn again);
//   - *GenerationRunningError when the session already has a pending or streaming
//     assistant message.
//
// On SQLite the checks run inside the transaction with the write lock held (BEGIN
// IMMEDIATE on the one writer connection). On PostgreSQL they run on a read of the session,
// and the write happens only if the session is still as read (its updated_at and metadata,
// which every turn changes): a turn that lost to a concurrent one reads again and meets it
// (a new session is written in a transaction that locks it). The partial unique indexes
// (one running generation per session, one client_request_id per user) stay as the last
// line, and their violations map to the same errors.
func (s *Store) CreateTurn(ctx context.Context, user, assistant *Message, start TurnStart) error {
	if err := prepareTurn(user, assistant); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := s.createTurnTx(ctx, user, assistant, start)
		if !lostRace(err) || attempt == createTurnAttempts {
			return err
		}
		// A concurrent turn got past the checks first and has committed since (or changed
		// the session): the next attempt's read finds it and names it (or finds it gone and
		// goes ahead).
	}
}

// lostRace reports whether a begin lost to a concurrent write and may be tried again: a
// partial unique index fired, or the session changed between the read and the write.
func lostRace(err error) bool {
	if errors.Is(err, errSessionMoved) {
		return true
	}
	idx, unique := uniqueViolation(err)
	return unique && (idx == idxOneRunning || idx == idxClientRequestID)
}

// prepareTurn fills the defaults described at CreateTurn and refuses inconsistent pairs.
func prepareTurn(user, assistant *Message) error {
	if user.SessionID == "" || user.UserID == "" {
		return errors.New("store: create turn: the user message needs a session and a user")
	}
	if user.ID == "" {
		user.ID = NewID()
	}
	if assistant.ID == "" {
		assistant.ID = NewID()
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
