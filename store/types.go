package store

import (
	"errors"
	"time"
)

// Sentinel errors for expected states. Callers check them with errors.Is and the API maps
// them to HTTP statuses in one place.
var (
	// ErrNotFound is returned when a row does not exist or belongs to another user: the two
	// are deliberately indistinguishable so that ids do not leak.
	ErrNotFound = errors.New("store: not found")

	// ErrPhaseChanged is returned by MovePhase when the session is no longer in the phase
	// the move starts from: another request moved it meanwhile. Nothing was written; the
	// caller reloads the session and decides again (the API answers 409).
	ErrPhaseChanged = errors.New("store: session phase changed meanwhile")
)

// GenerationRunningError reports that the session already has an assistant message being
// generated; MessageID names it so the client can follow that stream instead (HTTP 409).
type GenerationRunningError struct{ MessageID string }

// Error implements error; the message names the running message for logs.
func (e *GenerationRunningError) Error() string {
	return "store: a generation is already running in this session (message " + e.MessageID + ")"
}

// DuplicateRequestError reports that a turn with the same client_request_id already exists
// in the session; the API answers the earlier message again instead of starting a second
// generation.
type DuplicateRequestError struct{ UserMessageID, AssistantMessageID string }

// Error implements error; the message names the earlier assistant message for logs.
func (e *DuplicateRequestError) Error() string {
	return "store: client_request_id already used (message " + e.AssistantMessageID + ")"
}

// Message statuses. An assistant message is pending until the upstream answers, streaming
// while deltas arrive, and ends in exactly one of the terminal statuses.
const (
	StatusPending     = "pending"
	StatusStreaming   = "streaming"
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusCancelled   = "cancelled"
	StatusInterrupted = "interrupted"
)

// Session is one conversation. Artifacts holds the per-phase artifact blocks as a JSON object
// keyed by phase name; Metadata holds server-side state (carryover, turn counts, latest
// strategy id).
type Session struct {
	ID                 string    `db:"id" json:"id"`
	UserID             string    `db:"user_id" json:"-"`
	Title              string    `db:"title" json:"title"`
	Locale             string    `db:"locale" json:"locale"`
	Phase              string    `db:"phase" json:"phase"`
	Status             string    `db:"status" json:"status"`
	Artifacts          JSON      `db:"artifacts" json:"artifacts"`
	Metadata           JSON      `db:"metadata" json:"metadata"`
	PreviousResponseID string    `db:"previous_response_id" json:"-"`
	CreatedAt          time.Time `db:"created_at" json:"created_at"`
	UpdatedAt          time.Time `db:"updated_at" json:"updated_at"`
}

// Message is one user or assistant message. The JSON columns hold what the postprocessor
// extracted from an assistant reply; they are null for user messages.
type Message struct {
	ID              string     `db:"id" json:"id"`
	SessionID       string     `db:"session_id" json:"session_id"`
	UserID          string     `db:"user_id" json:"-"`
	Role            string     `db:"role" json:"role"`
	Status          string     `db:"status" json:"status"`
	Content         string     `db:"content" json:"content"`
	Phase           string     `db:"phase" json:"phase"`
	RequestID       string     `db:"request_id" json:"request_id"`
	ClientRequestID string     `db:"client_request_id" json:"client_request_id,omitempty"`
	ResponseID      string     `db:"response_id" json:"response_id,omitempty"`
	ToolCalls       JSON       `db:"tool_calls" json:"tool_calls"`
	GenUI           JSON       `db:"genui" json:"genui"`
	StatePatch      JSON       `db:"state_patch" json:"state_patch"`
	Validation      JSON       `db:"validation" json:"validation"`
	Usage           JSON       `db:"usage" json:"usage"`
	Error           JSON       `db:"error" json:"error"`
	Metadata        JSON       `db:"metadata" json:"metadata"`
	LastEventID     int64      `db:"last_event_id" json:"last_event_id"`
	CreatedAt       time.Time  `db:"created_at" json:"created_at"`
	CompletedAt     *time.Time `db:"completed_at" json:"completed_at"`

	// ReplyTo is, on an assistant message, the id of the user message it answers (set by
	// CreateTurn; a repeated client_request_id finds the earlier pair through it). Empty
	// on user messages.
	ReplyTo string `db:"reply_to" json:"reply_to,omitempty"`
}

// Event is one entry of a message's durable event log: Seq is its position (1, 2, 3 …
// without gaps) and becomes the SSE id; Data is the JSON payload sent to clients.
type Event struct {
	MessageID string    `db:"message_id"`
	Seq       int64     `db:"seq"`
	Name      string    `db:"name"`
	Data      JSON      `db:"data"`
	CreatedAt time.Time `db:"created_at"`
}
