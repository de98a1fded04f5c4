// Package events is the vocabulary of the client event stream (sse-contract.md §3): the five
// event names, the payload of each, and the error codes. The orchestrator produces these
// payloads, the event log stores them as JSON, and the API forwards them untouched, so the
// contract lives in exactly one place.
package events

// Event names as they appear on the wire after "event:".
const (
	Status       = "status"
	ContentDelta = "content_delta"
	Completed    = "completed"
	Error        = "error"
	Heartbeat    = "heartbeat"
)

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

// Error codes of the error event. Clients match on them, so they never change.
const (
	CodeProviderError       = "provider_error"
	CodeUpstreamTimeout     = "upstream_timeout"
	CodeUpstreamUnavailable = "upstream_unavailable"
	CodeRateLimited         = "rate_limited"
	CodeReplyInvalid        = "reply_invalid"
	CodeCancelled           = "cancelled"
	CodeInterrupted         = "interrupted"
	CodeInternalError       = "internal_error"
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
	From              string     `json:"from,omitempty"`
	To                string     `json:"to,omitempty"`
}

// DeltaData is the payload of a content_delta event. Seq counts content deltas of one attempt
// from 1; Attempt is set from the second attempt on, when the client must start over.
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
	Metadata any `json:"metadata"`
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
}

// HeartbeatData is the payload of a heartbeat. LastEventID is the id of the last event this
// connection delivered, so a client can tell whether it missed something.
type HeartbeatData struct {
	Base
	TS          int64 `json:"ts"`
	LastEventID int64 `json:"last_event_id"`
}
