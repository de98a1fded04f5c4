package upstream

// EventKind says which of the few stream events the orchestrator acts on an [Event] is. The
// Responses API sends some fifty event types; everything not listed here (in_progress,
// content parts, argument deltas, list-tools progress, …) is read and dropped by the client.
type EventKind string

// The event kinds, in the order they arrive within one response.
const (
	// EventCreated is the first event: the response exists upstream. It carries the
	// provisional ResponseID, the Model and the UpstreamRequestID.
	EventCreated EventKind = "created"
	// EventTextDelta carries a piece of the reply's text in Delta.
	EventTextDelta EventKind = "text_delta"
	// EventToolCallStarted reports that the model began an MCP call; Tool holds its id,
	// server and tool name (arguments are not known yet).
	EventToolCallStarted EventKind = "tool_call_started"
	// EventToolCallDone reports the end of an MCP call with its arguments and either its
	// output or its error.
	EventToolCallDone EventKind = "tool_call_done"
	// EventCompleted is the last event of a successful response, with the final
	// ResponseID (the one to send as previous_response_id) and Usage.
	EventCompleted EventKind = "completed"
)

// Event is one orchestrator-relevant event of a streamed response. Only the fields that
// belong to its Kind are set; the struct is typed so consumers switch on Kind instead of
// asserting types.
type Event struct {
	// Kind says which fields are meaningful.
	Kind EventKind
	// ResponseID is the upstream response id (resp_…). On EventCompleted it is the id from
	// response.completed, which some bridges make differ from the created one
	// (BerriAI/litellm#37956); that is the id to continue a conversation from.
	ResponseID string
	// Model is the model the upstream resolved the request to (created and completed).
	Model string
	// Delta is the text of an EventTextDelta.
	Delta string
	// Tool describes the MCP call of EventToolCallStarted and EventToolCallDone.
	Tool *ToolCall
	// Usage is the token accounting of EventCompleted, nil if the upstream sent none.
	Usage *Usage
	// UpstreamRequestID is the x-request-id response header, set on EventCreated, for
	// matching our logs with the provider's.
	UpstreamRequestID string
	// EndpointID names the configured endpoint that produced the event. A client leaves it
	// 0; the router that chose the endpoint stamps it on every event it passes on, so
	// status: routed and completed can say which endpoint answered.
	EndpointID int
	// Provider is the provider of that endpoint (see [DetectProvider]), stamped like
	// EndpointID.
	Provider string
	// OutputMode is the JSON output mode the endpoint was sent ([JSONOutput.ModeUsed]),
	// stamped like EndpointID; "" for a prose request.
	OutputMode string
}

// ToolCall is one MCP call the upstream ran on the model's behalf.
type ToolCall struct {
	// ID is the call's item id (mcp_…); a retried call gets a new one.
	ID string
	// ServerLabel names the MCP server as configured in the request's tools.
	ServerLabel string
	// Name is the tool name.
	Name string
	// Arguments is the call's arguments as a JSON text (empty on EventToolCallStarted).
	Arguments string
	// Output is the tool's result text when the call succeeded.
	Output string
	// Error is the failure as one line of text. The upstream sends either a string or an
	// object ({type, code, message} or {type, content}); both are flattened here.
	Error string
	// Failed reports a failed call: mcp_call.failed arrived, the item's status is
	// "failed", or it carries an error.
	Failed bool
}

// Usage is the token accounting of one response, as the provider bills it.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}
