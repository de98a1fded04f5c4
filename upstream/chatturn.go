package upstream

import (
	"context"
	"encoding/json"
	"fmt"
)

// chatTurn is what the client remembers across the rounds of one chat request.
type chatTurn struct {
	yield     func(Event, error) bool
	requestID string
	created   bool
	id, model string
	usage     *Usage
	round     int
}

// announce yields EventCreated with the first chunk of the first round. It returns false
// when the consumer stopped.
func (t *chatTurn) announce(id, model string) bool {
	if t.created {
		return true
	}
	t.created = true
	return t.yield(Event{Kind: EventCreated, ResponseID: id, Model: model, UpstreamRequestID: t.requestID}, nil)
}

// add takes a finished round's id, model and usage.
func (t *chatTurn) add(rd *chatRound) {
	t.round++
	t.id, t.model = firstNonEmpty(rd.id, t.id), firstNonEmpty(rd.model, t.model)
	if rd.usage == nil {
		return
	}
	if t.usage == nil {
		t.usage = &Usage{}
	}
	t.usage.InputTokens += rd.usage.PromptTokens
	t.usage.OutputTokens += rd.usage.CompletionTokens
	t.usage.TotalTokens += rd.usage.TotalTokens
}

// completed is the EventCompleted of the whole request.
func (t *chatTurn) completed() Event {
	return Event{Kind: EventCompleted, ResponseID: t.id, Model: t.model, Usage: t.usage}
}

// runCalls runs the tool calls of a round in order, reporting each with
// EventToolCallStarted and EventToolCallDone, and adds the round's assistant message and
// the results to the conversation. It returns errStopped when the consumer stopped and
// ctx's error when ctx ended.
func (t *chatTurn) runCalls(ctx context.Context, tools Toolset, conv *conversation, rd *chatRound) error {
	funcs := make(map[string]Function)
	for _, f := range tools.Functions() {
		funcs[f.Name] = f
	}
	for i, pc := range rd.calls {
		if pc.id == "" { // vLLM has dropped tool call ids (vllm#18412)
			pc.id = fmt.Sprintf("call_%d_%d", t.round, i+1)
		}
	}
	conv.addAssistant(rd.content.String(), rd.calls)
	for _, pc := range rd.calls {
		fn, known := funcs[pc.name]
		call := ToolCall{ID: pc.id, ServerLabel: fn.ServerLabel, Name: firstNonEmpty(fn.Tool, pc.name)}
		started := call
		if !t.yield(Event{Kind: EventToolCallStarted, Tool: &started}, nil) {
			return errStopped
		}
		res := runOne(ctx, tools, known, pc)
		if err := ctx.Err(); err != nil {
			return err
		}
		call.Arguments, call.Output, call.Error, call.Failed = pc.arguments(), res.Output, res.Error, res.Failed
		if !t.yield(Event{Kind: EventToolCallDone, Tool: &call}, nil) {
			return errStopped
		}
		conv.addResult(pc.id, res)
	}
	return nil
}

// runOne runs one call, refusing a function no server offered and arguments that are not
// a JSON object without bothering the server.
func runOne(ctx context.Context, tools Toolset, known bool, pc *pendingCall) ToolResult {
	if !known {
		return ToolResult{Failed: true, Error: fmt.Sprintf("no MCP server offers a tool named %q", pc.name), Reason: ReasonUnknownTool}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(pc.arguments()), &obj) != nil {
		return ToolResult{Failed: true, Error: "the arguments are not a JSON object", Reason: ReasonBadArguments}
	}
	return tools.Call(ctx, pc.name, pc.arguments())
}
