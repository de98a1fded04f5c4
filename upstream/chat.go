package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
)

// DefaultMaxToolRounds bounds the rounds of tool calls one chat request may run when
// [ChatConfig.MaxToolRounds] is 0.
const DefaultMaxToolRounds = 8

// ToolHost opens the MCP servers a request's tools name, so a [ChatClient] can offer their
// tools to a model that cannot reach them itself. Package upstream/mcptools implements it
// with the official MCP SDK.
type ToolHost interface {
	// Open connects to every MCP server in tools (Responses-style MCP tool objects) and
	// lists its allowed tools. A server that cannot be reached is left out rather than
	// failing the request; an error means nothing can be offered at all.
	Open(ctx context.Context, tools []json.RawMessage) (Toolset, error)
}

// Toolset is the MCP servers opened for one request. Close ends their sessions.
type Toolset interface {
	// Functions are the tools offered to the model, with unique function names.
	Functions() []Function
	// Call runs the named function with arguments (a JSON object as text). It never
	// returns a Go error: a tool that fails, times out or is unknown is a failed result,
	// which the model gets to see and may retry.
	Call(ctx context.Context, function, arguments string) ToolResult
	// Close ends the sessions; it waits for nothing the caller started.
	Close() error
}

// Function is one MCP tool as the model sees it on the Chat Completions wire.
type Function struct {
	// Name is the function name sent to the model, unique across the servers of a
	// request (the tool name, or label__tool when two servers share one).
	Name string
	// ServerLabel and Tool say which MCP server and tool the function runs.
	ServerLabel, Tool string
	// Description is the tool's description.
	Description string
	// Parameters is the tool's input JSON Schema.
	Parameters json.RawMessage
}

// ToolResult is the outcome of one [Toolset.Call].
type ToolResult struct {
	// Output is the tool's text when it succeeded.
	Output string
	// Error is the failure as one line of text when Failed.
	Error string
	// Failed reports a tool error (isError), a protocol error, a time-out or a bad call.
	Failed bool
	// Reason, on a failure Phaseflow itself decided, names it (ReasonUnknownTool,
	// ReasonBadArguments, ReasonTimeout), so the model can be told in the session's
	// locale ([Request.Say]); "" for the tool's or the protocol's own error.
	Reason string
}

// The failures a client or toolset decides itself, as [ToolResult.Reason] and the keys
// [Request.Say] renders (with "tool_failed", the line a failed result is sent as).
const (
	ReasonUnknownTool  = "tool_unknown"
	ReasonBadArguments = "tool_bad_arguments"
	ReasonTimeout      = "tool_timeout"
	sayToolFailed      = "tool_failed"
)

// ChatConfig says where a Chat Completions upstream is and how to run tools for it.
type ChatConfig struct {
	// BaseURL is the API root; "/chat/completions" is appended.
	BaseURL string
	// APIKey is sent as a bearer token when set.
	APIKey string
	// Transport replaces the default transport (see [Config.Transport]).
	Transport http.RoundTripper
	// Tools runs the MCP tools of a request; nil sends no tools at all.
	Tools ToolHost
	// MaxToolRounds bounds the rounds of tool calls; the last round is sent with
	// tool_choice "none" so the model has to answer. 0 means [DefaultMaxToolRounds].
	MaxToolRounds int
}

// ChatClient streams replies from an upstream that speaks the Chat Completions API
// (docs/upstreams.md): OpenAI, OpenRouter, vLLM, Ollama and most gateways. Such an
// upstream cannot call MCP servers, so the client does: it runs the tool loop itself and
// reports each call as the Responses client does, with EventToolCallStarted and
// EventToolCallDone, so a consumer cannot tell the wires apart. It is safe for concurrent
// use.
type ChatClient struct {
	// completionTokens: the endpoint is OpenAI's own, which takes max_completion_tokens.
	completionTokens bool
	endpoint         string
	apiKey           string
	rt               http.RoundTripper
	tools            ToolHost
	maxRounds        int
}

// NewChat returns a Chat Completions client for cfg.
func NewChat(cfg ChatConfig) *ChatClient {
	rounds := cfg.MaxToolRounds
	if rounds <= 0 {
		rounds = DefaultMaxToolRounds
	}
	return &ChatClient{
		completionTokens: openAIHost(cfg.BaseURL),
		endpoint:         endpointURL(cfg.BaseURL, "/chat/completions"),
		apiKey:           cfg.APIKey, rt: transportOr(cfg.Transport), tools: cfg.Tools, maxRounds: rounds,
	}
}

// CloseIdleConnections closes the kept-alive connections of the client's transport.
func (c *ChatClient) CloseIdleConnections() { closeIdle(c.rt) }

// Stream sends req and returns the reply's events, with the same contract as
// [Client.Stream]: zero or more events, then either EventCompleted or exactly one error
// (ctx.Err() itself when ctx ended). EventCreated comes with the first chunk of the first
// round; each tool call the model makes is run between rounds and reported with
// EventToolCallStarted and EventToolCallDone; EventCompleted carries the last round's id
// and the usage of all rounds. req.PreviousResponseID is ignored: the wire is stateless.
func (c *ChatClient) Stream(ctx context.Context, req Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		yield = storable(yield)
		err := c.stream(ctx, req, yield)
		if err == nil || err == errStopped {
			return
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		yield(Event{}, err)
	}
}

// stream runs the rounds of one request. It returns nil after EventCompleted, errStopped
// when the consumer stopped, and otherwise the failure (not yet yielded).
func (c *ChatClient) stream(ctx context.Context, req Request, yield func(Event, error) bool) error {
	conv, err := newConversation(req)
	if err != nil {
		return err
	}
	conv.completionTokens = c.completionTokens
	var tools Toolset
	if c.tools != nil && hasMCPTools(req.Tools) {
		if tools, err = c.tools.Open(ctx, req.Tools); err != nil {
			return &Error{Kind: KindProvider, Message: "cannot open the MCP servers", err: err}
		}
		defer tools.Close()
		conv.offer(tools.Functions())
	}
	turn := &chatTurn{yield: yield}
	for round := 0; ; round++ {
		last := round >= c.maxRounds
		rd, err := c.round(ctx, conv.body(last), turn)
		if err != nil {
			return err
		}
		turn.add(rd)
		if len(rd.calls) == 0 {
			if !yield(turn.completed(), nil) {
				return errStopped
			}
			return nil
		}
		if last || tools == nil {
			return &Error{Kind: KindProvider, Message: fmt.Sprintf("the model asked for tools after %d rounds of tool calls", round)}
		}
		if err := turn.runCalls(ctx, tools, conv, rd); err != nil {
			return err
		}
	}
}

// round sends one request of the loop and reads its streamed answer.
func (c *ChatClient) round(ctx context.Context, body chatRequest, turn *chatTurn) (*chatRound, error) {
	out, err := c.newRequest(ctx, body)
	if err != nil {
		return nil, err
	}
	a, err := openStream(c.rt, out)
	if err != nil {
		return nil, err
	}
	turn.requestID = firstNonEmpty(turn.requestID, a.requestID)
	read := readChatRound
	if a.whole {
		read = readWholeChat
	}
	rd, err := read(a.body, turn)
	release(a.body, err == nil)
	return rd, err
}

// newRequest builds the HTTP request of one round.
func (c *ChatClient) newRequest(ctx context.Context, body chatRequest) (*outgoing, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("upstream: encode chat request: %w", err)
	}
	return newPost(ctx, c.endpoint, c.apiKey, body.headers, b)
}

// hasMCPTools reports whether tools holds at least one MCP tool object.
func hasMCPTools(tools []json.RawMessage) bool {
	for _, raw := range tools {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &head) == nil && head.Type == "mcp" {
			return true
		}
	}
	return false
}
