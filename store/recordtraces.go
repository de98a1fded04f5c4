package store

import (
	"context"
	"fmt"
)

// RecordTraces writes traces of a running message's upstream requests on their own, fenced
// as [Store.CommitEvents] fences a message's events: only while the message is still
// running and owned by owner (false, nothing written, otherwise). It is for traces no event
// is there to carry: a turn hands its request's trace to the event log after its reply's
// first delta has reached clients, so that commit, which the client waits on, does not
// write the request's kilobytes too, and the trace rides with the next delta's commit, or
// with this one when no delta follows within the log's short wait (a slow model). A trace
// already written (a retried write whose first try went through) is left as it is.
func (s *Store) RecordTraces(ctx context.Context, owner, messageID string, traces []Trace) (bool, error) {
	if len(traces) == 0 {
		return true, nil
	}
	at := now()
	for i := range traces {
		traces[i].MessageID, traces[i].SentAt, traces[i].Headers = messageID, orNowAt(traces[i].SentAt, at), emptyObject(traces[i].Headers)
	}
	var ok bool
	var err error
	if s.isPostgres() {
		ok, err = s.recordTracesPG(ctx, owner, messageID, traces)
	} else {
		ok, err = s.recordTracesSQLite(ctx, owner, messageID, traces)
	}
	if err != nil {
		return false, fmt.Errorf("store: record traces of %s: %w", messageID, err)
	}
	return ok, nil
}

// recordTracesPG is one statement: the fence reads the message row FOR SHARE, so a
// takeover's UPDATE of its owner waits for this insert to commit, or this insert finds the
// row no longer the owner's and writes nothing.
func (s *Store) recordTracesPG(ctx context.Context, owner, messageID string, traces []Trace) (bool, error) {
	args, err := traceArrays(traces)
	if err != nil {
		return false, err
	}
	stmt, err := s.prepared(ctx, recordTracesPG)
	if err != nil {
		return false, err
	}
	var fenced bool
	err = stmt.QueryRowContext(ctx, append(args, messageID, owner)...).Scan(&fenced)
	return fenced, err
}

// recordTracesPG's parameters are traceArrays' nine, then the message and its owner.
const recordTracesPG = `
WITH f AS (
	SELECT 1 FROM messages m
	WHERE m.id = $10 AND m.owner = $11 AND ` + runningAssistantM + `
	FOR SHARE
), t AS (
	INSERT INTO message_traces (message_id, attempt, seq, method, url, headers, body, truncated, sent_at)
	SELECT t.message_id, t.attempt, t.seq, COALESCE(t.method, ''), COALESCE(t.url, ''), t.headers,
		COALESCE(t.body, ''), t.truncated, t.sent_at -- a lone empty text splits to no element
	FROM unnest(string_to_array($1::text, E'\x1e'), $2::int[], $3::int[], string_to_array($4::text, E'\x1e'),
		string_to_array($5::text, E'\x1e'), string_to_array($6::text, E'\x1e'), string_to_array($7::text, E'\x1e'),
		$8::bool[], string_to_array($9::text, E'\x1e')::timestamptz[])
		AS t(message_id, attempt, seq, method, url, headers, body, truncated, sent_at)
	WHERE EXISTS (SELECT 1 FROM f)
	ON CONFLICT (message_id, attempt, seq) DO NOTHING
)
SELECT EXISTS (SELECT 1 FROM f)`

// recordTracesSQLite checks the fence and inserts in one transaction, which holds SQLite's
// one write lock from its BEGIN (_txlock=immediate), so nothing moves the row in between.
func (s *Store) recordTracesSQLite(ctx context.Context, owner, messageID string, traces []Trace) (bool, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var n int
	err = tx.GetContext(ctx, &n, `SELECT count(*) FROM messages
		WHERE id = ? AND owner = ? AND role = 'assistant' AND status IN ('pending', 'streaming')`, messageID, owner)
	if err != nil || n == 0 {
		return false, err
	}
	if err := s.insertTraces(ctx, tx, messageID, traces); err != nil {
		return false, err
	}
	return true, tx.Commit()
}
