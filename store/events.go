package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// Bind-parameter limits per statement: PostgreSQL's wire protocol counts them in 16 bits,
// SQLite's SQLITE_MAX_VARIABLE_NUMBER defaults to 32766.
const (
	pgMaxParams     = 65535
	sqliteMaxParams = 32766
	eventColumns    = 5
)

// notifyChannel is the PostgreSQL channel CommitEvents notifies and Listen follows.
const notifyChannel = "phaseflow_events"

// Unwritten names the messages of a batch whose events [Store.CommitEvents] did not write.
type Unwritten struct {
	// Lost are no longer the owner's running messages (another replica took them over, or
	// they ended): their producers must stop, and nothing they queued was ever shown.
	Lost []string
	// Refused would have finished with a settlement the store refuses: its strategy is
	// another user's, or a new strategy names a session that is not the user's (ErrNotFound,
	// as for any foreign id). None of their events in the batch were written and the
	// message still runs under its owner, whose producer may end it otherwise.
	Refused []string
}

// CommitEvents writes a batch of events (of one or many messages) for the replica owner, in
// one transaction (on PostgreSQL a single prepared statement, one round trip per group
// commit), and reports the messages it could not write.
//
// For each message of the batch, the write is fenced by its row: it goes in only while the
// message is still running and owned by owner. A message taken over by another replica
// (its lease expired and was claimed, see [Store.ClaimOrphans]) or already ended is
// reported Lost and none of its events are written. The other messages' events are
// written, their last_event_id advanced, their Status and Finish (see [Event]) applied, and
// on PostgreSQL one notification per watched message ("<message_id>:<max seq>", ids only;
// see [Store.Watch]) is sent at commit, so a listener that reads the log after one arrives
// sees the rows.
//
// Any event may carry traces of the message's upstream requests (Event.Traces), written
// with it under the same fence ([Store.RecordTraces] writes them with no event).
//
// A finish may carry the turn's records (Message.Records) and its settlement
// (Message.Settlement: the session after the turn and the strategy it recorded, merged as
// UpsertStrategy merges), written under the same fence in the same transaction: the
// session is settled exactly when the message has completed, in one commit instead of two.
// A settlement whose strategy the store refuses leaves its message unwritten (Refused).
//
// The log has no gaps and no rewrites: a batch whose events of a message do not follow each
// other (side by side, by seq) fails whole, and a message whose stored log already reaches the first seq
// the batch brings for it (its last_event_id) is reported Lost, as a message this replica
// no longer writes. CreatedAt is set to now where zero.
func (s *Store) CommitEvents(ctx context.Context, owner string, events []Event) (Unwritten, error) {
	if len(events) == 0 {
		return Unwritten{}, nil
	}
	stampEvents(events)
	msgs := summarise(events)
	if err := checkStatuses(msgs); err != nil {
		return Unwritten{}, fmt.Errorf("store: commit events: %w", err)
	}
	prepareSettlements(msgs)
	if s.isPostgres() {
		owned, refused, err := s.commitPG(ctx, owner, events, msgs)
		if err != nil {
			return Unwritten{}, fmt.Errorf("store: commit events: %w", err)
		}
		return unwritten(msgs, owned, refused), nil
	}
	owned, refused, err := s.commitSQLite(ctx, owner, events, msgs)
	if err != nil {
		return Unwritten{}, fmt.Errorf("store: commit events: %w", err)
	}
	return unwritten(msgs, owned, refused), nil
}

// commitSQLite is CommitEvents on SQLite: one transaction of a few statements (SQLite has
// one writer, so nothing interleaves with it).
func (s *Store) commitSQLite(ctx context.Context, owner string, events []Event, msgs []msgBatch) (owned, refused map[string]bool, err error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	if refused, err = s.refusedSettlements(ctx, tx, owner, msgs); err != nil {
		return nil, nil, err
	}
	if owned, err = s.advanceMessages(ctx, tx, owner, msgs, refused); err != nil {
		return nil, nil, err
	}
	kept := events
	if len(owned) < len(msgs) {
		kept = keepOwned(events, owned)
	}
	if err := s.insertEvents(ctx, tx, kept); err != nil {
		return nil, nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, nil, fmt.Errorf("commit: %w", err)
	}
	s.noteCommit()
	return owned, refused, nil
}

// checkStatuses refuses a status a message cannot move to through its log, a finish that
// would leave the message running, and a settlement the commit cannot write (one with a
// phase move, or on a message that did not complete).
func checkStatuses(msgs []msgBatch) error {
	for _, m := range msgs {
		switch {
		case m.unordered:
			return fmt.Errorf("message %s: its events in a batch must follow each other, side by side and by seq", m.id)
		case m.finish != nil && !isTerminal(m.status):
			return fmt.Errorf("message %s: a finish needs a terminal status, not %q", m.id, m.status)
		case m.settles() && (m.status != StatusCompleted || m.finish.Settlement.Move != nil || m.finish.Settlement.Session == nil):
			return fmt.Errorf("message %s: a finish settles a completed turn's session, without a phase move", m.id)
		case m.status != "" && m.status != StatusStreaming && !isTerminal(m.status):
			return fmt.Errorf("message %s: cannot move to status %q through its log", m.id, m.status)
		}
	}
	return nil
}

// msgBatch is what one batch does to one message row.
type msgBatch struct {
	id     string
	maxSeq int64
	// unordered is set when the message's events in the batch do not follow each other, side
	// by side and by seq: they are stored as one run (eventruns.go), written in the batch's
	// order, whose key is its first seq, so a seq repeated inside a batch would not meet the
	// primary key, as it did one row an event.
	unordered bool
	// firstSeq is the message's first seq in the batch. The row is written only where its
	// last_event_id is below it, so no run overlaps one stored before (a retried commit
	// that had in fact been written, or a seq written twice).
	firstSeq int64
	status   string   // "" keeps the status
	finish   *Message // the terminal event's outcome, if the batch holds it
	traces   []Trace  // the traces its events carry (Event.Traces)
}

// settles reports whether the batch finishes the message with a settlement.
func (m msgBatch) settles() bool { return m.finish != nil && m.finish.Settlement != nil }

// summarise lists the messages of a batch in id order, with the highest seq of each and
// the status its last status-changing event sets. Id order is the order every statement
// that writes several message rows locks them in (see RenewLeases), so two of them never
// wait on each other in a cycle.
func summarise(events []Event) []msgBatch {
	var out []msgBatch
	index := make(map[string]int, 1)
	for i := range events {
		e := &events[i]
		j, ok := index[e.MessageID]
		if !ok {
			j = len(out)
			index[e.MessageID] = j
			out = append(out, msgBatch{id: e.MessageID, firstSeq: e.Seq})
		}
		m := &out[j]
		if ok && (e.Seq != m.maxSeq+1 || events[i-1].MessageID != e.MessageID) {
			m.unordered = true
		}
		m.maxSeq = max(m.maxSeq, e.Seq)
		if e.Status != "" {
			m.status = e.Status
		}
		m.traces = append(m.traces, e.Traces...)
		if e.Finish != nil {
			m.finish, m.status = e.Finish, e.Finish.Status
		}
	}
	slices.SortFunc(out, func(a, b msgBatch) int { return strings.Compare(a.id, b.id) })
	return out
}

// advanceMessages applies each message's part of the batch to its row, fenced by owner and
// a running status, and returns the ids it could write; refused ones are left alone.
func (s *Store) advanceMessages(ctx context.Context, tx *sqlx.Tx, owner string, msgs []msgBatch, refused map[string]bool) (map[string]bool, error) {
	owned := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		if refused[m.id] {
			continue
		}
		ok, err := s.advanceMessage(ctx, tx, owner, m)
		if err != nil {
			return nil, err
		}
		if ok {
			owned[m.id] = true
		}
	}
	return owned, nil
}

// advanceMessage writes one message's last_event_id, status and, with a finish, its
// outcome columns; false when the row is not owner's running message.
func (s *Store) advanceMessage(ctx context.Context, tx *sqlx.Tx, owner string, m msgBatch) (bool, error) {
	args := []any{m.maxSeq}
	if m.status != "" {
		args = append(args, m.status)
	}
	if isTerminal(m.status) {
		args = append(args, now())
	}
	if f := m.finish; f != nil {
		args = append(args, f.Content, f.ResponseID, f.ToolCalls, f.GenUI, f.StatePatch,
			f.Validation, f.Usage, f.Error, f.Metadata)
	}
	args = append(args, m.id, owner, m.firstSeq)
	q := advanceSet
	switch {
	case m.finish != nil:
		q = advanceOutcome
	case isTerminal(m.status):
		q = advanceEnd
	case m.status != "":
		q = advanceStatus
	}
	res, err := tx.ExecContext(ctx, q+advanceWhere, args...)
	if err != nil {
		return false, fmt.Errorf("message %s: %w", m.id, err)
	}
	n, err := res.RowsAffected()
	if err != nil || n != 1 {
		return false, err
	}
	if len(m.traces) > 0 {
		if err := s.insertTraces(ctx, tx, m.id, m.traces); err != nil {
			return false, fmt.Errorf("message %s: record traces: %w", m.id, err)
		}
	}
	if m.finish == nil {
		return true, nil
	}
	if err := s.writeRecords(ctx, tx, m.id, m.finish); err != nil {
		return false, err
	}
	return true, s.writeSettlement(ctx, tx, m)
}

// The statements advanceMessage runs, by what the batch does to the message: its
// last_event_id only; with a status; with a status that ends it; with its outcome too
// (checkStatuses lets an outcome come only with an end, and an end only with a status).
// SQLite only: PostgreSQL's commit is one statement (commitEventsPG).
const (
	advanceWhere   = ` WHERE id = ? AND owner = ? AND status IN ('pending', 'streaming') AND last_event_id < ?`
	advanceSet     = `UPDATE messages SET last_event_id = MAX(last_event_id, ?)`
	advanceStatus  = advanceSet + `, status = ?`
	advanceEnd     = advanceStatus + `, completed_at = COALESCE(completed_at, ?)`
	advanceOutcome = advanceEnd + `, content = ?, response_id = ?, tool_calls = ?, genui = ?,
		state_patch = ?, validation = ?, usage = ?, error = ?, metadata = ?`
)

// unwritten lists the messages of a batch that were not written: refused, or else lost.
func unwritten(msgs []msgBatch, owned, refused map[string]bool) Unwritten {
	var u Unwritten
	for _, m := range msgs {
		switch {
		case refused[m.id]:
			u.Refused = append(u.Refused, m.id)
		case !owned[m.id]:
			u.Lost = append(u.Lost, m.id)
		}
	}
	return u
}

// keepOwned drops the events of messages not in owned.
func keepOwned(events []Event, owned map[string]bool) []Event {
	kept := make([]Event, 0, len(events))
	for _, e := range events {
		if owned[e.MessageID] {
			kept = append(kept, e)
		}
	}
	return kept
}

// stampEvents gives every event without a time one shared timestamp.
func stampEvents(events []Event) {
	t := now()
	for i := range events {
		events[i].CreatedAt = orNowAt(events[i].CreatedAt, t)
	}
}

// insertEvents writes events as runs (eventruns.go) with multi-row INSERTs, split so no
// statement exceeds the driver's parameter limit.
func (s *Store) insertEvents(ctx context.Context, e sqlx.ExecerContext, events []Event) error {
	rows, err := runRows(events)
	if err != nil {
		return err
	}
	for batch := range slices.Chunk(rows, s.maxParams()/eventColumns) {
		query, args := s.insertRunsQuery(batch)
		if _, err := e.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("insert events: %w", err)
		}
	}
	return nil
}

// insertRunsQuery builds one multi-row INSERT of runs for batch.
func (s *Store) insertRunsQuery(batch []runRow) (string, []any) {
	var b strings.Builder
	b.Grow(80 + len(batch)*len(", (?, ?, ?, ?, ?)"))
	b.WriteString(`INSERT INTO message_event_runs (message_id, seq, names, data, times) VALUES `)
	args := make([]any, 0, len(batch)*eventColumns)
	for i, r := range batch {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, r.messageID, r.seq, r.names, r.data, r.times)
	}
	return s.db.Rebind(b.String()), args
}

// checkEventData refuses an event whose payload, not NULL, is not JSON. Both databases'
// commits check with it, so both refuse the same payloads. It uses validJSON: encoding/json's
// validator was most of laying out a PostgreSQL commit and, through JSON.Value, a visible
// share of a SQLite replica's CPU.
func checkEventData(e Event) error {
	if !validJSON(e.Data) {
		return fmt.Errorf("event %s/%d: data is not valid JSON", e.MessageID, e.Seq)
	}
	return nil
}

// ListEvents returns the events of a message with seq > afterSeq, ascending, at most limit
// of them (limit <= 0 means all). Replaying from the log is how every subscriber starts.
// It does not check ownership: the caller has resolved the message with GetMessage.
//
// It reads the runs from the one that holds afterSeq+1 (the last to start at or before
// it) on; limit+1 runs hold limit events after afterSeq at least, as each holds one or more
// and only the first can hold events at or before it.
func (s *Store) ListEvents(ctx context.Context, messageID string, afterSeq int64, limit int) ([]Event, error) {
	q := `SELECT seq, names, data, times FROM message_event_runs
		WHERE message_id = ? AND seq >= COALESCE(
			(SELECT max(seq) FROM message_event_runs WHERE message_id = ? AND seq <= ?), 0)
		ORDER BY seq`
	args := []any{messageID, messageID, afterSeq + 1}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit+1)
	}
	rows, err := s.rdb.QueryContext(ctx, s.rdb.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("store: list events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() && (limit <= 0 || len(out) < limit) {
		var seq int64
		var names, data, times string
		if err := rows.Scan(&seq, &names, &data, &times); err != nil {
			return nil, fmt.Errorf("store: list events: %w", err)
		}
		run, err := splitRun(messageID, seq, names, data, times)
		if err != nil {
			return nil, fmt.Errorf("store: list events: %w", err)
		}
		for _, e := range run {
			if e.Seq > afterSeq && (limit <= 0 || len(out) < limit) {
				out = append(out, e)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list events: %w", err)
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
