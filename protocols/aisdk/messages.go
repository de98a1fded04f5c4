package aisdk

import (
	"encoding/json"
	"fmt"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/protocols/turnlog"
	"github.com/phaseflow/phaseflow/store"
)

// UIMessage is a message as the AI SDK's useChat holds it: what GET …/messages answers, for
// a page's initial messages after a reload.
type UIMessage struct {
	ID       string          `json:"id"`
	Role     string          `json:"role"`
	Parts    []UIPart        `json:"parts"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// UIPart is one part of a UIMessage; only the fields its type uses are set.
type UIPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	State      string          `json:"state,omitempty"`
	ID         string          `json:"id,omitempty"`
	Data       any             `json:"data,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     any             `json:"output,omitempty"`
	ErrorText  string          `json:"errorText,omitempty"`
}

// UIMessages are a conversation's stored messages as the AI SDK holds them: the user's
// text, and each reply's kept text (its reasoning and its answer), cards, state patch, MCP
// calls and metadata. A reply still being written is left out: the page resumes it.
func UIMessages(msgs []store.Message) ([]UIMessage, error) {
	out := make([]UIMessage, 0, len(msgs))
	for _, m := range msgs {
		switch {
		case m.Role == store.RoleUser:
			out = append(out, UIMessage{ID: m.ID, Role: "user", Parts: []UIPart{{Type: "text", Text: m.Content, State: "done"}}})
		case m.Role == store.RoleAssistant && m.CompletedAt != nil:
			a, err := assistant(m)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// assistant is a finished reply as a UIMessage.
func assistant(m store.Message) (UIMessage, error) {
	reasoning, answer := turnlog.Split(m.Content)
	var parts []UIPart
	if reasoning != "" {
		parts = append(parts, UIPart{Type: "reasoning", Text: reasoning, State: "done"})
	}
	if answer != "" {
		parts = append(parts, UIPart{Type: "text", Text: answer, State: "done"})
	}
	var md events.Metadata
	if hasValue(json.RawMessage(m.Metadata)) {
		if err := json.Unmarshal(m.Metadata, &md); err != nil {
			return UIMessage{}, fmt.Errorf("aisdk: message %s metadata: %w", m.ID, err)
		}
	}
	for _, c := range cards(&md) {
		parts = append(parts, UIPart{Type: c.Type, ID: c.ID, Data: c.Data})
	}
	for i, c := range md.ToolCalls {
		p := UIPart{Type: "dynamic-tool", ToolName: toolName(c), ToolCallID: toolCallID(m.ID, i), Input: input(c), State: "output-available", Output: c.Output}
		if c.Status == store.ToolFailure {
			p.State, p.Output, p.ErrorText = "output-error", nil, c.Error
		}
		parts = append(parts, p)
	}
	return UIMessage{ID: m.ID, Role: "assistant", Parts: parts, Metadata: json.RawMessage(m.Metadata)}, nil
}
