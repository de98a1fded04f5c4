package store

import (
	"errors"
	"fmt"
	"time"
)

// prepareTurn fills what a turn's two messages leave out (ids, roles, statuses, times: the
// assistant's one microsecond after the user's, so the pair sorts in order; the assistant's
// session, user, phase and request ids from the user message) and links the pair (the
// assistant's ReplyTo is the user message and it carries a copy of the client_request_id),
// and refuses inconsistent pairs.
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
	user.Role = cmpOr(user.Role, RoleUser)
	assistant.Role = cmpOr(assistant.Role, RoleAssistant)
	user.Status = cmpOr(user.Status, StatusCompleted)
	assistant.Status = cmpOr(assistant.Status, StatusPending)
	assistant.SessionID = cmpOr(assistant.SessionID, user.SessionID)
	assistant.UserID = cmpOr(assistant.UserID, user.UserID)
	assistant.Phase = cmpOr(assistant.Phase, user.Phase)
	assistant.RequestID = cmpOr(assistant.RequestID, user.RequestID)
	assistant.ClientRequestID = user.ClientRequestID
	assistant.ReplyTo = user.ID
	switch {
	case user.Role != RoleUser || assistant.Role != RoleAssistant:
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
