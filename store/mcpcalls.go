package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// MCPCall is one MCP tool call made while an assistant message was generated. The rows
// outlive the event stream, so a turn's tool use can be shown and audited later.
type MCPCall struct {
	ID          string    `db:"id" json:"id"`
	MessageID   string    `db:"message_id" json:"message_id"`
	SessionID   string    `db:"session_id" json:"session_id"`
	ServerLabel string    `db:"server_label" json:"server_label"`
	Name        string    `db:"name" json:"name"`
	Arguments   JSON      `db:"arguments" json:"arguments"`
	Output      string    `db:"output" json:"output"`
	Error       string    `db:"error" json:"error"`
	Status      string    `db:"status" json:"status"`
	DurationMS  int64     `db:"duration_ms" json:"duration_ms"`
	CreatedAt   time.Time `db:"created_at" json:"created_at"`
}

// mcpCallColumns is the column list of mcp_calls, for INSERT and SELECT alike.
const mcpCallColumns = `id, message_id, session_id, server_label, name, arguments, output,
	error, status, duration_ms, created_at`

// InsertMCPCalls stores the MCP calls of a turn in one transaction: all of them or none.
// It fills what the caller left empty and writes it back into calls: the id (a UUIDv7),
// the session (taken from the message) and the time (one instant per batch plus one
// microsecond per position, so the calls list in the order given). MessageID, Name and
// Status are required. A call whose message does not exist fails the batch with an error
// wrapping ErrNotFound; one whose SessionID names another session than its message's
// fails it too. There is no owner check: the orchestrator writes calls of messages it
// already holds.
func (s *Store) InsertMCPCalls(ctx context.Context, calls []MCPCall) error {
	if len(calls) == 0 {
		return nil
	}
	if err := prepareMCPCalls(calls); err != nil {
		return err
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: insert mcp calls: %w", err)
	}
	defer tx.Rollback()
	sessionOf := make(map[string]string) // message id → session id, one look-up per message
	for i := range calls {
		if err := s.insertMCPCall(ctx, tx, &calls[i], sessionOf); err != nil {
			return fmt.Errorf("store: insert mcp calls: call %d (%s): %w", i, calls[i].Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: insert mcp calls: commit: %w", err)
	}
	return nil
}

// prepareMCPCalls checks the required fields and fills ids and times.
func prepareMCPCalls(calls []MCPCall) error {
	at := now()
	for i := range calls {
		c := &calls[i]
		if c.MessageID == "" || c.Name == "" || c.Status == "" {
			return fmt.Errorf("store: insert mcp calls: call %d needs a message id, a name and a status", i)
		}
		if c.ID == "" {
			c.ID = newID()
		}
		c.CreatedAt = orNowAt(c.CreatedAt, at.Add(time.Duration(i)*time.Microsecond))
	}
	return nil
}

// insertMCPCall resolves the call's session from its message, then writes the row.
func (s *Store) insertMCPCall(ctx context.Context, tx *sqlx.Tx, c *MCPCall, sessionOf map[string]string) error {
	sessionID, ok := sessionOf[c.MessageID]
	if !ok {
		err := tx.GetContext(ctx, &sessionID, s.db.Rebind(`SELECT session_id FROM messages WHERE id = ?`), c.MessageID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("message %s: %w", c.MessageID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		sessionOf[c.MessageID] = sessionID
	}
	if c.SessionID != "" && c.SessionID != sessionID {
		return fmt.Errorf("message %s belongs to session %s, not %s", c.MessageID, sessionID, c.SessionID)
	}
	c.SessionID = sessionID
	_, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO mcp_calls (`+mcpCallColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		c.ID, c.MessageID, c.SessionID, c.ServerLabel, c.Name, c.Arguments, c.Output, c.Error,
		c.Status, c.DurationMS, c.CreatedAt)
	return err
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
