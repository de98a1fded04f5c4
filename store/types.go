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

	// ErrMessageFinished is returned by RequestCancel for a message whose generation has
	// already ended: there is nothing left to stop (the API answers 409).
	ErrMessageFinished = errors.New("store: the message has already finished")

	// ErrUnavailable marks an error caused by the database being unreachable (refused or
	// dropped connections, a server shutting down). Check it with [IsUnavailable], which
	// also recognises the drivers' own errors; the API answers 503 database_unavailable.
	ErrUnavailable = errors.New("store: database unavailable")
)

// GenerationRunningError reports that the session already has an assistant message being
// generated; MessageID names it so the client can follow that stream instead (HTTP 409).
type GenerationRunningError struct{ MessageID string }

// Error implements error; the message names the running message for logs.
func (e *GenerationRunningError) Error() string {
	return "store: a generation is already running in this session (message " + e.MessageID + ")"
}

// DuplicateRequestError reports that the user already started a turn with the same
// client_request_id, in this session or another (a client_request_id names one turn per
// user, whatever the route); the API answers the earlier message and its session again
// instead of starting a second generation.
type DuplicateRequestError struct{ UserMessageID, AssistantMessageID, SessionID string }

// Error implements error; the message names the earlier assistant message for logs.
func (e *DuplicateRequestError) Error() string {
	return "store: client_request_id already used (message " + e.AssistantMessageID + ")"
}

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
)

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

	// Owner is the replica that runs (or ran) the generation of an assistant message; see
	// [Lease]. Empty on user messages.
	Owner string `db:"owner" json:"-"`

	// ReplyTo is, on an assistant message, the id of the user message it answers (set by
	// CreateTurn; a repeated client_request_id finds the earlier pair through it). Empty
	// on user messages.
	ReplyTo string `db:"reply_to" json:"reply_to,omitempty"`

	// Records, on a terminal event's outcome (Event.Finish), are what the turn recorded
	// besides these columns (its MCP calls, its upstream traces), written in the same
	// transaction. Not a column; never read back.
	Records *TurnRecords `db:"-" json:"-"`
	// Settlement, on a completed turn's outcome (Event.Finish), is the session and strategy
	// state the turn settles, written by the commit that finishes the message (see
	// [Store.CommitEvents]); a settlement with a phase move is not: [Store.SettleTurn] writes
	// it first. Not a column.
	Settlement *Settlement `db:"-" json:"-"`
}

// Event is one entry of a message's durable event log: Seq is its position (1, 2, 3 …
// without gaps) and becomes the SSE id; Data is the JSON payload sent to clients.
//
// Status and Finish are not columns of the log: they are what the event does to its
// message row, written in the same transaction as the event by [Store.CommitEvents], so
// the row never says what the log does not show (a message is completed exactly when its
// completed event is in the log).
type Event struct {
	MessageID string    `db:"message_id"`
	Seq       int64     `db:"seq"`
	Name      string    `db:"name"`
	Data      JSON      `db:"data"`
	CreatedAt time.Time `db:"created_at"`

	// Status, when set, is the message status this event moves the message to (the
	// working event moves it to streaming).
	Status string `db:"-"`
	// Finish, on a terminal event, holds the message's outcome: its status (terminal) and
	// result columns (content, response id, tool calls, GenUI, patch, validation, usage,
	// error, metadata), and the turn's Records (MCP call rows, traces).
	Finish *Message `db:"-"`
	// Traces are requests sent upstream for the message, written with this event under the
	// same fence. A turn hands its traces over as soon as its reply streams, so it does not
	// keep a copy of its prompt until it ends (Records on the finish carries the rest).
	Traces []Trace `db:"-"`
}

// Lease is a replica's claim on the generations it runs (docs/turn.md). Owner is the
// replica id; the claim lasts TTL from its last renewal, measured by the database's clock.
// Only a generation whose lease has expired may be taken over by another replica.
type Lease struct {
	Owner string
	TTL   time.Duration
}

// TurnStart is how [Store.CreateTurn] begins a generation: the lease of the replica that
// will run it, the first events of its log, and a session it creates (NewSession: the user
// message's SessionID must be its id).
type TurnStart struct {
	Lease      Lease
	Events     []Event
	NewSession *Session
}

// Seen is what a turn's begin saw besides the session row: whether each of the plan's
// reads has anything to find. The begin's read answers these with index lookups in the
// statement it runs anyway, and the plan skips a read that would come back empty, so the first turn
// of a session with no stored prompts reads nothing more. They hold as of the turn's start,
// as the reads' own answers would: a prompt activated after it waits for the next turn.
type Seen struct {
	// History: the session has messages from earlier turns.
	History bool `db:"has_history"`
	// Strategy: the session has a strategy of its user's.
	Strategy bool `db:"has_strategy"`
	// Prompts: an admin has activated a stored prompt for the session's locale.
	Prompts bool `db:"has_prompts"`
}

// LeaseState is one generation a replica still owns after [Store.RenewLeases], with
// whether a cancel was requested for it through any replica.
type LeaseState struct {
	MessageID       string `db:"id"`
	CancelRequested bool   `db:"cancel_requested"`
}
