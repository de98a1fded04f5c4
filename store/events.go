package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Bind-parameter limits per statement: PostgreSQL's wire protocol counts them in 16 bits,
// SQLite's SQLITE_MAX_VARIABLE_NUMBER defaults to 32766.
const (
	pgMaxParams     = 65535
	sqliteMaxParams = 32766
	eventColumns    = 5
)

// notifyChannel is the PostgreSQL channel AppendEvents notifies and Listen follows.
const notifyChannel = "phaseflow_events"

// AppendEvents writes a batch of events in one transaction: multi-row INSERTs (split so no
// statement exceeds the driver's parameter limit), then each message's last_event_id is
// advanced to its highest seq, and on PostgreSQL one pg_notify per message carrying
// "<message_id>:<max seq>" (ids only: payloads are capped at 8000 bytes and the data is in
// the table). Notifications are sent at commit, so a listener that reads the log after one
// arrives sees the rows. Batching in time is the caller's job.
//
// A repeated (message_id, seq) fails the whole batch: the log has no gaps and no rewrites.
// CreatedAt is set to now where zero and written back into events.
func (s *Store) AppendEvents(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	t := now()
	maxSeq := make(map[string]int64)
	var order []string // message ids in first-seen order, for deterministic statements
	for i := range events {
		e := &events[i]
		e.CreatedAt = orNowAt(e.CreatedAt, t)
		if _, seen := maxSeq[e.MessageID]; !seen {
			order = append(order, e.MessageID)
		}
		maxSeq[e.MessageID] = max(maxSeq[e.MessageID], e.Seq)
	}

	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: append events: %w", err)
	}
	defer tx.Rollback()
	for batch := range slices.Chunk(events, s.maxParams()/eventColumns) {
		query, args := s.insertEventsQuery(batch)
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("store: append events: %w", err)
		}
	}
	advance := s.db.Rebind(`UPDATE messages SET last_event_id = ? WHERE id = ? AND last_event_id < ?`)
	payloads := make([]string, 0, len(order))
	for _, id := range order {
		if _, err := tx.ExecContext(ctx, advance, maxSeq[id], id, maxSeq[id]); err != nil {
			return fmt.Errorf("store: append events: advance last_event_id: %w", err)
		}
		payloads = append(payloads, id+":"+strconv.FormatInt(maxSeq[id], 10))
	}
	if s.isPostgres() {
		if _, err := tx.ExecContext(ctx, `SELECT pg_notify('`+notifyChannel+`', p) FROM unnest($1::text[]) AS p`, pq.Array(payloads)); err != nil {
			return fmt.Errorf("store: append events: notify: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: append events: commit: %w", err)
	}
	return nil
}

// insertEventsQuery builds one multi-row INSERT for batch.
func (s *Store) insertEventsQuery(batch []Event) (string, []any) {
	var b strings.Builder
	b.Grow(64 + len(batch)*len(", (?, ?, ?, ?, ?)"))
	b.WriteString(`INSERT INTO message_events (message_id, seq, name, data, created_at) VALUES `)
	args := make([]any, 0, len(batch)*eventColumns)
	for i, e := range batch {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, e.MessageID, e.Seq, e.Name, e.Data, e.CreatedAt)
	}
	return s.db.Rebind(b.String()), args
}

// ListEvents returns the events of a message with seq > afterSeq, ascending, at most limit
// of them (limit <= 0 means all). Replaying from the log is how every subscriber starts.
// It does not check ownership: the caller has resolved the message with GetMessage.
func (s *Store) ListEvents(ctx context.Context, messageID string, afterSeq int64, limit int) ([]Event, error) {
	q := `SELECT message_id, seq, name, data, created_at FROM message_events
		WHERE message_id = ? AND seq > ? ORDER BY seq`
	args := []any{messageID, afterSeq}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	var out []Event
	if err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(q), args...); err != nil {
		return nil, fmt.Errorf("store: list events: %w", err)
	}
	for i := range out {
		out[i].CreatedAt = out[i].CreatedAt.UTC()
	}
	return out, nil
}

// maxParams is the dialect's bind-parameter limit per statement.
func (s *Store) maxParams() int {
	if s.isPostgres() {
		return pgMaxParams
	}
	return sqliteMaxParams
}

// orNowAt returns dbTime(t), or at when t is zero (one timestamp for a whole batch).
func orNowAt(t, at time.Time) time.Time {
	if t.IsZero() {
		return at
	}
	return dbTime(t)
}
