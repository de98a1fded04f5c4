// Package events is the vocabulary of the client event stream (docs/api.md): the five
// event names, the payload of each (completed's metadata included), and the [Emitter] every
// turn writes them through; the error codes are package failure's. The orchestrator produces these payloads,
// the event log stores them as JSON, and the API forwards them untouched, so the contract
// lives in exactly one place.
package events

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/phaseflow/phaseflow/store"
)

// Event names as they appear on the wire after "event:".
const (
	Status       = "status"
	ContentDelta = "content_delta"
	Completed    = "completed"
	Error        = "error"
	Heartbeat    = "heartbeat"
)

// Events of a JSON-skill job's stream (GET /api/v1/skills/jobs/{id}/events): progress as
// its inputs finish, then Completed, or JobCancelled when it was cancelled; Heartbeat
// between.
const (
	JobProgress  = "progress"
	JobCancelled = "cancelled"
)

// Answer names an event of the watchers' answers stream (GET /api/v1/watch/answers): an
// answer from a phone to type into the pane that asked.
const Answer = "answer"

// IsTerminal reports whether an event ends its message's stream: after it the server closes
// the connection and a reconnect past it answers 204.
func IsTerminal(name string) bool { return name == Completed || name == Error }

// Status states, in their order of appearance.
const (
	StateQueued       = "queued"
	StateWorking      = "working"
	StateRouted       = "routed"
	StateToolCall     = "tool_call"
	StateRetrying     = "retrying"
	StatePhaseChanged = "phase_changed"
)

// Base holds the fields every event carries, so a client can tell turns and tabs apart.
type Base struct {
	MessageID string `json:"message_id"`
	RequestID string `json:"request_id"`
}

// Route describes which upstream served the turn; it repeats on routed, completed and error.
type Route struct {
	Provider          string  `json:"provider,omitempty"`
	ResolvedModel     *string `json:"resolved_model"`
	EndpointID        int     `json:"endpoint_id"`
	UpstreamRequestID *string `json:"upstream_request_id,omitempty"`
}

// ToolState is the tool field of a status: tool_call event.
type ToolState struct {
	ServerLabel string `json:"server_label"`
	Name        string `json:"name"`
	State       string `json:"state"`
}

// StatusData is the payload of a status event; which optional fields are set depends on State.
type StatusData struct {
	Base
	State             string     `json:"state"`
	Provider          string     `json:"provider,omitempty"`
	ResolvedModel     string     `json:"resolved_model,omitempty"`
	EndpointID        int        `json:"endpoint_id,omitempty"`
	UpstreamRequestID string     `json:"upstream_request_id,omitempty"`
	Phase             string     `json:"phase,omitempty"`
	Tool              *ToolState `json:"tool,omitempty"`
	Attempt           int        `json:"attempt,omitempty"`
	Reason            string     `json:"reason,omitempty"`
	// DiscardThroughSeq, on retrying, is the last seq of the refused attempt: the client
	// drops the deltas with seq up to it. A pointer, because 0 (no delta yet) is a value.
	DiscardThroughSeq *int   `json:"discard_through_seq,omitempty"`
	From              string `json:"from,omitempty"`
	To                string `json:"to,omitempty"`
}

// DeltaData is the payload of a content_delta event. Seq counts the message's content
// deltas from 1, increasing by one across the whole message, retries included; Attempt is
// set from the second attempt on. The reply is the deltas in seq order after the last
// retrying status's discard_through_seq.
type DeltaData struct {
	Base
	Seq     int    `json:"seq"`
	Delta   string `json:"delta"`
	Attempt int    `json:"attempt,omitempty"`
}

// CompletedData is the payload of the terminal completed event. It carries no reply text:
// the client assembles it from the deltas and checks it against ReplyLen (code points).
type CompletedData struct {
	Base
	Route
	ReplyLen int `json:"reply_len"`
	// Metadata is the turn's [Metadata], encoded once by the caller with [Encode]: the same
	// bytes are the message's metadata column and the event's. It holds the turn's GenUI
	// cards, tool calls and validation, the largest value a turn encodes.
	Metadata json.RawMessage `json:"metadata"`
}

// ErrorData is the payload of the terminal error event. Error repeats Message for old clients.
type ErrorData struct {
	Base
	Code          string  `json:"code"`
	Message       string  `json:"message"`
	Error         string  `json:"error"`
	Provider      string  `json:"provider,omitempty"`
	ResolvedModel *string `json:"resolved_model"`
	EndpointID    int     `json:"endpoint_id"`
	// ToolCalls are the MCP calls the turn made before it failed (each with its attempt):
	// tools that really ran, a backtest or a rollout, whatever became of the turn.
	ToolCalls []store.ToolCall `json:"tool_calls,omitempty"`
	// Fallback, when the stream broke after partial text, is a short valid ThinkingML
	// reply in the session's locale that says the answer was cut off and what to do; the
	// client may show it after (or instead of) the partial text.
	Fallback string `json:"fallback,omitempty"`
}

// HeartbeatData is the payload of a heartbeat. LastEventID is the id of the last event this
// connection delivered, so a client can tell whether it missed something.
type HeartbeatData struct {
	Base
	TS          int64 `json:"ts"`
	LastEventID int64 `json:"last_event_id"`
}

// Encode marshals an event payload as one line of JSON, the form the log stores and the
// SSE writer sends as is. HTML escaping is off: replies are full of "<" and ">", and
// "\u003c" would only make every frame longer and harder to read.
func Encode(data any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(data); err != nil {
		return nil, fmt.Errorf("events: encode %T: %w", data, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
