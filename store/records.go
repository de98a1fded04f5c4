package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// TurnRecords is what a turn records besides its message's result columns. It rides on
// the terminal event's outcome (Message.Records on Event.Finish), so [Store.CommitEvents]
// writes it with the commit that ends the message (on PostgreSQL inside that commit's one
// statement, on SQLite a few more statements in its transaction), and the MCP calls exist
// exactly when the message has ended (under the same owner fence).
type TurnRecords struct {
	// Calls are every MCP call of the turn, each with its attempt; their message, session
	// and outcome (the message's final status) are filled in from the message.
	Calls []MCPCall
	// Traces are the requests sent upstream, redacted, per attempt, that an earlier event
	// did not carry (Event.Traces, Store.RecordTraces: a turn records its requests once its
	// reply's first delta is out).
	Traces []Trace
}

// Trace is one request Phaseflow sent upstream for a message, redacted by the upstream
// client (API keys, x-mcp-context tokens, credentials in the URL), its body cut at a cap.
// The JSON names are those of GET /api/v1/messages/{id}/trace.
type Trace struct {
	MessageID string `db:"message_id" json:"-"`
	// Attempt is the turn's attempt (2 after a correction retry); Seq counts the requests
	// of one attempt from 1 (a failover to another endpoint, a chat tool round).
	Attempt   int       `db:"attempt" json:"attempt"`
	Seq       int       `db:"seq" json:"seq"`
	Method    string    `db:"method" json:"method"`
	URL       string    `db:"url" json:"url"`
	Headers   JSON      `db:"headers" json:"headers"`
	Body      string    `db:"body" json:"body"`
	Truncated bool      `db:"truncated" json:"truncated"`
	SentAt    time.Time `db:"sent_at" json:"sent_at"`
}

// Column counts of the multi-row inserts below.
const (
	callColumns  = 13
	traceColumns = 9
)

// writeRecords writes the records of message id, finished as f, inside tx (SQLite; on
// PostgreSQL they are part of commitEventsPG).
func (s *Store) writeRecords(ctx context.Context, tx *sqlx.Tx, id string, f *Message) error {
	r := f.Records
	if r == nil {
		return nil
	}
	if len(r.Calls) > 0 {
		if err := s.recordCalls(ctx, tx, id, f, r.Calls); err != nil {
			return fmt.Errorf("message %s: record calls: %w", id, err)
		}
	}
	if len(r.Traces) > 0 {
		if err := s.insertTraces(ctx, tx, id, r.Traces); err != nil {
			return fmt.Errorf("message %s: record traces: %w", id, err)
		}
	}
	return nil
}

// recordCalls fills the calls' ids, times, message, session and outcome, then writes them.
func (s *Store) recordCalls(ctx context.Context, tx *sqlx.Tx, id string, f *Message, calls []MCPCall) error {
	session := f.SessionID
	if session == "" {
		if err := tx.GetContext(ctx, &session, s.db.Rebind(`SELECT session_id FROM messages WHERE id = ?`), id); err != nil {
			return err
		}
	}
	for i := range calls {
		calls[i].MessageID, calls[i].SessionID, calls[i].Outcome = id, session, f.Status
	}
	if err := prepareMCPCalls(calls); err != nil {
		return err
	}
	return s.insertCallRows(ctx, tx, calls)
}

// insertCallRows writes calls with multi-row INSERTs (their messages and sessions set).
func (s *Store) insertCallRows(ctx context.Context, e sqlx.ExecerContext, calls []MCPCall) error {
	for batch := range slices.Chunk(calls, s.maxParams()/callColumns) {
		args := make([]any, 0, len(batch)*callColumns)
		for _, c := range batch {
			args = append(args, c.ID, c.MessageID, c.SessionID, c.ServerLabel, c.Name, c.Arguments, c.Output,
				c.Error, c.Status, c.DurationMS, c.CreatedAt, c.Attempt, c.Outcome)
		}
		q := `INSERT INTO mcp_calls (` + mcpCallColumns + `) VALUES ` + placeholders(len(batch), callColumns)
		if _, err := e.ExecContext(ctx, s.db.Rebind(q), args...); err != nil {
			return err
		}
	}
	return nil
}

// insertTraces writes the traces of message id with multi-row INSERTs, passing over one
// written already, as recordTracesPG does (a write retried after its answer was lost).
func (s *Store) insertTraces(ctx context.Context, e sqlx.ExecerContext, id string, traces []Trace) error {
	at := now()
	for batch := range slices.Chunk(traces, s.maxParams()/traceColumns) {
		args := make([]any, 0, len(batch)*traceColumns)
		for _, t := range batch {
			args = append(args, id, t.Attempt, t.Seq, t.Method, t.URL, emptyObject(t.Headers), t.Body, t.Truncated, orNowAt(t.SentAt, at))
		}
		q := `INSERT INTO message_traces (message_id, attempt, seq, method, url, headers, body, truncated, sent_at) VALUES ` +
			placeholders(len(batch), traceColumns) + ` ON CONFLICT (message_id, attempt, seq) DO NOTHING`
		if _, err := e.ExecContext(ctx, s.db.Rebind(q), args...); err != nil {
			return err
		}
	}
	return nil
}

// placeholders is "(?, …), (?, …)" for rows of cols values.
func placeholders(rows, cols int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ")
}

// ListTraces returns the traces of a message, by attempt and order of sending, or
// ErrNotFound when the message is not userID's. anyUser (an admin) reads any message's.
func (s *Store) ListTraces(ctx context.Context, messageID, userID string, anyUser bool) ([]Trace, error) {
	q, args := `SELECT count(*) FROM messages WHERE id = ? AND user_id = ?`, []any{messageID, userID}
	if anyUser {
		q, args = `SELECT count(*) FROM messages WHERE id = ?`, []any{messageID}
	}
	var n int
	if err := s.rdb.GetContext(ctx, &n, s.rdb.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("store: list traces: %w", err)
	}
	if n == 0 {
		return nil, ErrNotFound
	}
	out := []Trace{}
	err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT message_id, attempt, seq, method, url, headers, body,
		truncated, sent_at FROM message_traces WHERE message_id = ? ORDER BY attempt, seq`), messageID)
	if err != nil {
		return nil, fmt.Errorf("store: list traces: %w", err)
	}
	for i := range out {
		out[i].SentAt = out[i].SentAt.UTC()
	}
	return out, nil
}
