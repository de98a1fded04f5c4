package store

import (
	"context"
	"fmt"
	"time"
)

// ToolStatus is how an MCP call ended.
type ToolStatus string

// The two outcomes of an MCP call.
const (
	ToolSuccess ToolStatus = "success"
	ToolFailure ToolStatus = "failure"
)

// ToolCall is one MCP call of a turn: the one record type from the stream handler, which
// times it, through post-processing (the failure-then-success rule) and the phase handlers,
// to completed.metadata.tool_calls and the mcp_calls table. The JSON names are those of
// the client contract (docs/api.md).
type ToolCall struct {
	ServerLabel string     `db:"server_label" json:"server_label"`
	Name        string     `db:"name" json:"name"`
	Arguments   JSON       `db:"arguments" json:"arguments"`
	Status      ToolStatus `db:"status" json:"status"`
	Output      string     `db:"output" json:"output,omitempty"`
	Error       string     `db:"error" json:"error,omitempty"`
	DurationMS  int64      `db:"duration_ms" json:"duration_ms"`
	// Attempt is the number of the turn's attempt that made the call (1, or 2 after a
	// correction retry): a call of a refused attempt really ran too.
	Attempt int `db:"attempt" json:"attempt"`
}

// MCPCall is one MCP tool call made while an assistant message was generated, as stored.
// The rows outlive the event stream, so a turn's tool use can be shown and audited later.
type MCPCall struct {
	ID        string `db:"id" json:"id"`
	MessageID string `db:"message_id" json:"message_id"`
	SessionID string `db:"session_id" json:"session_id"`
	ToolCall
	CreatedAt time.Time `db:"created_at" json:"created_at"`
	// Outcome is what became of the turn that made the call: its message's final status
	// (completed, failed, cancelled, interrupted).
	Outcome string `db:"outcome" json:"outcome"`
}

// mcpCallColumns is the column list of mcp_calls, for INSERT and SELECT alike.
const mcpCallColumns = `id, message_id, session_id, server_label, name, arguments, output,
	error, status, duration_ms, created_at, attempt, outcome`

// prepareMCPCalls checks the required fields and fills ids and times.
func prepareMCPCalls(calls []MCPCall) error {
	at := now()
	for i := range calls {
		c := &calls[i]
		if c.MessageID == "" || c.Name == "" || c.Status == "" {
			return fmt.Errorf("store: insert mcp calls: call %d needs a message id, a name and a status", i)
		}
		if c.ID == "" {
			c.ID = NewID()
		}
		c.Attempt = max(c.Attempt, 1)
		c.CreatedAt = orNowAt(c.CreatedAt, at.Add(time.Duration(i)*time.Microsecond))
	}
	return nil
}

// ListMCPCalls returns the MCP calls of a message in the order they were made, or
// ErrNotFound when the message is not userID's (an empty list means an owned message
// without calls).
func (s *Store) ListMCPCalls(ctx context.Context, messageID, userID string) ([]MCPCall, error) {
	if err := s.owned(ctx, tableMessages, messageID, userID); err != nil {
		return nil, err
	}
	var out []MCPCall
	err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT `+mcpCallColumns+` FROM mcp_calls
		WHERE message_id = ? ORDER BY created_at, id`), messageID)
	if err != nil {
		return nil, fmt.Errorf("store: list mcp calls: %w", err)
	}
	for i := range out {
		out[i].CreatedAt = out[i].CreatedAt.UTC()
	}
	return out, nil
}
