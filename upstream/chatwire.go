package upstream

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// chatRequest is the JSON body of POST /chat/completions. headers are the extra request
// headers of the [Request]; they are not part of the body.
type chatRequest struct {
	Model      string        `json:"model,omitempty"`
	Messages   []chatMessage `json:"messages"`
	Tools      []chatTool    `json:"tools,omitempty"`
	ToolChoice any           `json:"tool_choice,omitempty"`
	// The output limit goes in one of the two: OpenAI's own endpoints take
	// max_completion_tokens (their reasoning models refuse max_tokens), every other
	// OpenAI-compatible server max_tokens.
	MaxTokens           int                 `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                 `json:"max_completion_tokens,omitempty"`
	Temperature         *float64            `json:"temperature,omitempty"`
	ResponseFormat      *chatResponseFormat `json:"response_format,omitempty"`
	Stream              bool                `json:"stream"`
	StreamOptions       streamOptions       `json:"stream_options"`

	headers http.Header
}

// streamOptions asks for the usage chunk before [DONE] (docs/upstreams.md).
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message of the conversation. Content is null on an assistant message
// that only calls tools.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// chatToolCall is a tool call of an assistant message, as sent back to the model.
type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatFunctionCall `json:"function"`
}

// chatFunctionCall is the function part of a tool call.
type chatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatTool offers one function to the model.
type chatTool struct {
	Type     string          `json:"type"`
	Function chatFunctionDef `json:"function"`
}

// chatFunctionDef is the definition of an offered function.
type chatFunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptySchema is the parameters of a tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// conversation is the growing message list of one chat request: the instructions as the
// system message, the input, then each round's assistant message and tool results.
type conversation struct {
	req      Request
	messages []chatMessage
	tools    []chatTool
	choice   any
	// completionTokens sends the output limit as max_completion_tokens.
	completionTokens bool
}

// newConversation starts the conversation of req. A ToolChoice other than one of the
// strings auto, required and none (a Responses tool object) cannot be expressed on this
// wire and falls back to auto.
func newConversation(req Request) (*conversation, error) {
	c := &conversation{req: req}
	if instructions := req.JSON.instructions(req.Instructions); instructions != "" {
		c.messages = append(c.messages, chatMessage{Role: "system", Content: ptr(instructions)})
	}
	for _, in := range req.Input {
		if in.Role == "" {
			return nil, fmt.Errorf("upstream: input message without a role")
		}
		c.messages = append(c.messages, chatMessage{Role: in.Role, Content: ptr(in.Content)})
	}
	switch v := req.ToolChoice.(type) {
	case string:
		if v == "auto" || v == "required" || v == "none" {
			c.choice = v
		}
	}
	return c, nil
}

// offer adds the functions the model may call.
func (c *conversation) offer(fns []Function) {
	for _, f := range fns {
		params := f.Parameters
		if len(params) == 0 || !json.Valid(params) {
			params = emptySchema
		}
		c.tools = append(c.tools, chatTool{Type: "function", Function: chatFunctionDef{Name: f.Name, Description: f.Description, Parameters: params}})
	}
}

// body is the request of the next round; on the last allowed round the model may no
// longer call tools.
func (c *conversation) body(last bool) chatRequest {
	b := chatRequest{
		Model: c.req.Model, Messages: c.messages,
		Temperature: c.req.Temperature, ResponseFormat: c.req.JSON.chatFormat(), Stream: true, StreamOptions: streamOptions{IncludeUsage: true}, headers: c.req.Headers,
	}
	if c.completionTokens {
		b.MaxCompletionTokens = c.req.MaxOutputTokens
	} else {
		b.MaxTokens = c.req.MaxOutputTokens
	}
	if len(c.tools) > 0 {
		b.Tools, b.ToolChoice = c.tools, c.choice
		if last {
			b.ToolChoice = "none"
		}
	}
	return b
}

// addAssistant appends the assistant message of a round that called tools.
func (c *conversation) addAssistant(content string, calls []*pendingCall) {
	m := chatMessage{Role: "assistant"}
	if content != "" {
		m.Content = ptr(content)
	}
	for _, pc := range calls {
		m.ToolCalls = append(m.ToolCalls, chatToolCall{ID: pc.id, Type: "function", Function: chatFunctionCall{Name: pc.name, Arguments: pc.arguments()}})
	}
	c.messages = append(c.messages, m)
}

// addResult appends the result of one tool call. A failure is written by the request's
// Say in the session's locale when it has one.
func (c *conversation) addResult(callID string, res ToolResult) {
	text := res.Output
	if res.Failed {
		text = failureText(c.req, res)
	}
	c.messages = append(c.messages, chatMessage{Role: "tool", Content: ptr(text), ToolCallID: callID})
}

// failureText is how a failed call's result reads to the model: "Tool error: " and the
// error, both in the session's locale when the request can say them (a failure Phaseflow
// decided has a text of its own; the tool's own error stays in the tool's words).
func failureText(req Request, res ToolResult) string {
	detail := res.Error
	if res.Reason != "" && req.Say != nil {
		if t, ok := req.Say(res.Reason, nil); ok {
			detail = t
		}
	}
	if req.Say != nil {
		if t, ok := req.Say(sayToolFailed, map[string]string{"error": detail}); ok {
			return t
		}
	}
	return "Tool error: " + detail
}

// ptr returns a pointer to s.
func ptr(s string) *string { return &s }
