package aisdk

import (
	"encoding/json"
	"strconv"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// What a reply holds besides its text becomes data parts, each with an id so that a later
// one of the same id replaces it: the GenUI cards (data-genui, genui-N in the reply's
// order) and the state patch the turn applied (data-state). The status of a turn under way
// is data-status. MCP calls are dynamic tool parts, named server_label.name.

// Data part types.
const (
	dataGenUI  = "data-genui"
	dataState  = "data-state"
	dataStatus = "data-status"
)

// cards are the data chunks of a completed turn's cards and state.
func cards(md *events.Metadata) []chunk {
	var out []chunk
	for i, card := range md.GenUI {
		out = append(out, chunk{Type: dataGenUI, ID: cardID(i), Data: card})
	}
	if hasValue(md.StatePatch) {
		out = append(out, chunk{Type: dataState, ID: "state", Data: md.StatePatch})
	}
	return out
}

// cardID is the id of the reply's i-th card.
func cardID(i int) string { return "genui-" + strconv.Itoa(i) }

// hasValue reports whether raw holds a value other than null.
func hasValue(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// toolName is how an MCP call is named to the AI SDK.
func toolName(c store.ToolCall) string { return c.ServerLabel + "." + c.Name }

// toolCallID is the id of the message's i-th MCP call.
func toolCallID(messageID string, i int) string { return messageID + "-tool-" + strconv.Itoa(i) }

// toolParts are the chunks of a turn's MCP calls: each one's input, then its output or error.
func toolParts(messageID string, calls []store.ToolCall) []chunk {
	var out []chunk
	for i, c := range calls {
		id := toolCallID(messageID, i)
		out = append(out, chunk{Type: "tool-input-available", ToolCallID: id, ToolName: toolName(c), Input: input(c), Dynamic: true})
		if c.Status == store.ToolFailure {
			out = append(out, chunk{Type: "tool-output-error", ToolCallID: id, ErrorText: c.Error, Dynamic: true})
		} else {
			out = append(out, chunk{Type: "tool-output-available", ToolCallID: id, Output: c.Output, Dynamic: true})
		}
	}
	return out
}

// input is a call's arguments, {} when it had none.
func input(c store.ToolCall) json.RawMessage {
	if !hasValue(json.RawMessage(c.Arguments)) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(c.Arguments)
}
