package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/lib/pq"
)

// pgTime formats times for a timestamptz[] literal, to the microsecond PostgreSQL keeps.
const pgTime = "2006-01-02 15:04:05.999999Z07:00"

// commitEventsPG is the whole of CommitEvents on PostgreSQL as one statement, so a group
// commit costs one round trip (a statement runs in its own transaction): it advances and
// fences each message row (status, outcome, last_event_id), inserts the events of the rows it
// could write, and notifies per message. Its text is fixed (arrays, not a VALUES list), so it
// is prepared once per connection and PostgreSQL plans it once.
const commitEventsPG = `
WITH v AS (
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bool[], $5::text[], $6::text[],
		$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[])
		AS v(id, seq, status, fin, content, response_id, tool_calls, genui, state_patch, validation, usage, error, metadata)
), u AS (
	UPDATE messages m SET
		last_event_id = GREATEST(m.last_event_id, v.seq),
		status = CASE WHEN v.status = '' THEN m.status ELSE v.status END,
		completed_at = CASE WHEN v.status IN ('completed', 'failed', 'cancelled', 'interrupted')
			THEN COALESCE(m.completed_at, $14) ELSE m.completed_at END,
		content = CASE WHEN v.fin THEN v.content ELSE m.content END,
		response_id = CASE WHEN v.fin THEN v.response_id ELSE m.response_id END,
		tool_calls = CASE WHEN v.fin THEN v.tool_calls ELSE m.tool_calls END,
		genui = CASE WHEN v.fin THEN v.genui ELSE m.genui END,
		state_patch = CASE WHEN v.fin THEN v.state_patch ELSE m.state_patch END,
		validation = CASE WHEN v.fin THEN v.validation ELSE m.validation END,
		usage = CASE WHEN v.fin THEN v.usage ELSE m.usage END,
		error = CASE WHEN v.fin THEN v.error ELSE m.error END,
		metadata = CASE WHEN v.fin THEN v.metadata ELSE m.metadata END
	FROM v
	WHERE m.id = v.id AND m.owner = $15 AND m.status IN ('pending', 'streaming')
	RETURNING m.id, v.seq
), i AS (
	INSERT INTO message_events (message_id, seq, name, data, created_at)
	SELECT e.message_id, e.seq, e.name, e.data, e.created_at
	FROM unnest($16::text[], $17::bigint[], $18::text[], $19::text[], $20::timestamptz[])
		AS e(message_id, seq, name, data, created_at)
	WHERE e.message_id IN (SELECT id FROM u)
)
SELECT u.id FROM u, LATERAL (SELECT pg_notify('` + notifyChannel + `', u.id || ':' || u.seq)) AS n`

// commitPG runs commitEventsPG and returns the ids it could write. A batch that ends a
// message with records (its MCP calls, its upstream traces) runs the statement in a
// transaction with the records' inserts, so they exist exactly when the message has ended
// under the owner's fence; other batches stay one round trip.
func (s *Store) commitPG(ctx context.Context, owner string, events []Event, msgs []msgBatch) (map[string]bool, error) {
	args, err := commitArgs(owner, events, msgs)
	if err != nil {
		return nil, err
	}
	stmt, err := s.prepared(ctx, commitEventsPG)
	if err != nil {
		return nil, err
	}
	if !hasRecords(msgs) {
		return scanOwned(stmt.QueryContext(ctx, args...))
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	owned, err := scanOwned(tx.StmtContext(ctx, stmt).QueryContext(ctx, args...))
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if owned[m.id] && m.finish != nil {
			if err := s.writeRecords(ctx, tx, m.id, m.finish); err != nil {
				return nil, err
			}
		}
	}
	return owned, tx.Commit()
}

// hasRecords reports whether a batch ends a message that has records to write.
func hasRecords(msgs []msgBatch) bool {
	for _, m := range msgs {
		if f := m.finish; f != nil && f.Records != nil && (len(f.Records.Calls) > 0 || len(f.Records.Traces) > 0) {
			return true
		}
	}
	return false
}

// scanOwned collects the ids commitEventsPG returns.
func scanOwned(rows *sql.Rows, err error) (map[string]bool, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	owned := make(map[string]bool)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		owned[id] = true
	}
	return owned, rows.Err()
}

// commitArgs lays a batch out as the statement's arrays.
func commitArgs(owner string, events []Event, msgs []msgBatch) ([]any, error) {
	n := len(msgs)
	ids, seqs, statuses, fins := make([]string, n), make([]int64, n), make([]string, n), make([]bool, n)
	text := make([][]sql.NullString, 9) // content, response_id, then the seven JSON columns
	for c := range text {
		text[c] = make([]sql.NullString, n)
	}
	for i, m := range msgs {
		ids[i], seqs[i], statuses[i] = m.id, m.maxSeq, m.status
		if f := m.finish; f != nil {
			fins[i] = true
			cols, err := finishColumns(f)
			if err != nil {
				return nil, fmt.Errorf("message %s: %w", m.id, err)
			}
			for c := range text {
				text[c][i] = cols[c]
			}
		}
	}
	evArgs, err := eventArrays(events)
	if err != nil {
		return nil, err
	}
	args := []any{pq.Array(ids), pq.Array(seqs), pq.Array(statuses), pq.Array(fins)}
	for _, col := range text {
		args = append(args, pq.Array(col))
	}
	return append(append(args, now(), owner), evArgs...), nil
}

// eventArrays lays events out as five arrays (message ids, seqs, names, data, times) for
// an unnest into message_events.
func eventArrays(events []Event) ([]any, error) {
	k := len(events)
	evIDs, evSeqs, names, data, times := make([]string, k), make([]int64, k), make([]string, k), make([]sql.NullString, k), make([]string, k)
	for i, e := range events {
		evIDs[i], evSeqs[i], names[i], times[i] = e.MessageID, e.Seq, e.Name, e.CreatedAt.Format(pgTime)
		if !e.Data.IsNull() {
			if !json.Valid(e.Data) {
				return nil, fmt.Errorf("event %s/%d: data is not valid JSON", e.MessageID, e.Seq)
			}
			data[i] = sql.NullString{String: string(e.Data), Valid: true}
		}
	}
	return []any{pq.Array(evIDs), pq.Array(evSeqs), pq.Array(names), pq.Array(data), pq.Array(times)}, nil
}

// finishColumns are a message outcome's content, response id and JSON columns, each
// checked as JSON (nil for NULL).
func finishColumns(f *Message) ([]sql.NullString, error) {
	cols := []sql.NullString{{String: f.Content, Valid: true}, {String: f.ResponseID, Valid: true}}
	for _, j := range []JSON{f.ToolCalls, f.GenUI, f.StatePatch, f.Validation, f.Usage, f.Error, f.Metadata} {
		v, err := j.Value()
		if err != nil {
			return nil, err
		}
		s, ok := v.(string)
		cols = append(cols, sql.NullString{String: s, Valid: ok})
	}
	return cols, nil
}
