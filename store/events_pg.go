package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lib/pq"
)

// pgTime formats times for a timestamptz[] literal, to the microsecond PostgreSQL keeps.
const pgTime = "2006-01-02 15:04:05.999999Z07:00"

// commitEventsPG is the whole of CommitEvents on PostgreSQL as one statement, so a group
// commit costs one round trip (a statement runs in its own transaction): it advances and
// fences each message row (status, outcome, last_event_id), inserts the events of the rows it
// could write, the records of the messages it ends (their MCP calls and upstream traces, so
// the calls exist exactly when the message has ended under the owner's fence) and the
// traces its events carry (Event.Traces, under the same fence), and notifies per message
// that another replica follows (m.watched, Store.Watch). Its text is fixed (arrays and
// joined texts, not a VALUES list), so it is prepared once per connection and PostgreSQL
// plans it once. A batch that ends a turn with its settlement runs commitSettlingPG
// instead: the same statement with the settlements' parts (see settle_commit.go), which
// the other commits, the first delta's among them, do not carry.
//
// That one plan is made while the tables are small (a connection's sixth run) and kept
// until an ANALYZE of them. The UPDATE's condition is therefore the whole of
// runningAssistantM (runningAssistant qualified: v has a status too), role included: it matches the partial
// index of the owner's running messages, which stays as small as the replica's running
// turns, and the plan reads that index. With the role left out, the only index was the
// primary key, and against a guess of 10 rows from the unnest, a sequential scan of a
// still-small table was cheaper: the plan then read the whole messages table on every
// commit as it grew (on a fresh database, until autovacuum's first ANALYZE).
const commitEventsPG = commitMessages + commitUpdate + commitRows + commitSelect

// commitDeltasPG is commitEventsPG for the batch most commits are: events that end no
// message and carry no traces (every delta of a reply, its status events), which is all
// the statement then has to do: advance and fence each message row and insert its run. A
// paced reply commits each of its frames alone, and its client waits for the commit, so
// the other parts cost every frame: their empty parameters and the updates of columns only
// a finish sets were a clear share of such a commit's time (BenchmarkCommitOneEvent). Its
// runs come first (r) and its message rows (v) join them, one run a message (checkStatuses
// refuses a batch whose events of a message do not follow each other); the fence is
// commitUpdate's, so the plan reads the same partial index.
const commitDeltasPG = `
WITH r AS (
	SELECT * FROM unnest(string_to_array($1::text, E'\x1e'), $2::bigint[], string_to_array($3::text, E'\x1e'),
		string_to_array($4::text, E'\x1e'), string_to_array($5::text, E'\x1e'))
		AS r(message_id, seq, names, data, times)
), u AS (
	UPDATE messages m SET
		last_event_id = v.seq,
		status = CASE WHEN v.status = '' THEN m.status ELSE v.status END
	FROM unnest($6::text[], $7::bigint[], $8::text[]) AS v(id, seq, status) JOIN r ON r.message_id = v.id
	WHERE m.id = v.id AND m.owner = $9 AND ` + runningAssistantM + `
		AND m.last_event_id < r.seq
	RETURNING m.id, v.seq, m.watched
), i AS (
	INSERT INTO message_event_runs (message_id, seq, names, data, times)
	SELECT r.message_id, r.seq, r.names, COALESCE(r.data, ''), r.times -- a lone empty text splits to no element
	FROM r WHERE r.message_id IN (SELECT id FROM u)
)` + commitSelect

// commitDeltaPG is commitDeltasPG for one message, the batch of every commit at low load
// (a paced reply's frames, a first delta): its parameters are scalars, so the database
// has no arrays to split and unnest and no join to make, and the commit a client waits on
// is shorter again. Its fence is the others' (the
// plan reads the same partial index of the owner's running messages).
const commitDeltaPG = `
WITH u AS (
	UPDATE messages m SET
		last_event_id = $3::bigint,
		status = CASE WHEN $4::text = '' THEN m.status ELSE $4::text END
	WHERE m.id = $1::text AND m.owner = $5::text AND ` + runningAssistantM + `
		AND m.last_event_id < $2::bigint
	RETURNING m.id, $3::bigint AS seq, m.watched
), i AS (
	INSERT INTO message_event_runs (message_id, seq, names, data, times)
	SELECT u.id, $2::bigint, $6::text, $7::text, $8::text FROM u
)` + commitSelect

// commitSettlingPG is commitEventsPG for a batch that settles turns, with settlementArrays'
// parameters ($42–$58): the settlements (sv), those refused because their strategy is
// another user's or a new strategy names a session that is not the user's (r: the message
// is left unwritten, and reported), the strategies upserted as UpsertStrategy merges (st;
// never another user's row), and the sessions written, through the message row's own
// session, only where the strategy was (ss). Every look-up is a scalar subquery or a join
// on a primary key, so the generic plan probes indexes (TestCommitPlanProbesRunningMessages).
// Two settlements of one strategy in a batch fail it (a row is updated once per
// statement), and the log then commits its messages one by one.
const commitSettlingPG = commitMessages + `, sv AS (
	SELECT * FROM unnest($42::text[], $43::text[], $44::text[], $45::text[], $46::text[], $47::text[], $48::text[],
		string_to_array($49::text, E'\x1e'), string_to_array($50::text, E'\x1e'), $51::text[], $52::text[], $53::text[],
		$54::text[], string_to_array($55::text, E'\x1e', ''), $56::text[], $57::text[])
		AS sv(message_id, session_id, user_id, title, locale, phase, status, artifacts, metadata, previous_response_id,
			strategy_id, strategy_session, strategy_name, strategy_spec, strategy_status, strategy_backtest)
	LIMIT $58 -- the settlements' number: see settlementArrays
), r AS (
	SELECT sv.message_id FROM sv
	WHERE sv.strategy_id <> ''
		AND COALESCE((SELECT x.user_id <> sv.user_id FROM strategies x WHERE x.id = sv.strategy_id),
			sv.strategy_session <> '' AND (SELECT y.user_id FROM sessions y WHERE y.id = sv.strategy_session) IS DISTINCT FROM sv.user_id)
		AND (SELECT m.owner FROM messages m WHERE m.id = sv.message_id AND m.status IN ('pending', 'streaming')) = $15
)` + commitUpdate + `
		AND NOT EXISTS (SELECT 1 FROM r WHERE r.message_id = v.id)` + commitRows + `, st AS (
	INSERT INTO strategies AS x (id, user_id, session_id, name, spec, status, backtest_status, created_at, updated_at)
	SELECT sv.strategy_id, sv.user_id, NULLIF(sv.strategy_session, ''), sv.strategy_name, COALESCE(sv.strategy_spec, '{}'),
		COALESCE(NULLIF(sv.strategy_status, ''), 'draft'), COALESCE(NULLIF(sv.strategy_backtest, ''), 'none'), $14, $14
	FROM sv JOIN u ON u.id = sv.message_id
	WHERE sv.strategy_id <> ''
	ON CONFLICT (id) DO UPDATE SET
		name = COALESCE(NULLIF((SELECT w.strategy_name FROM sv w WHERE w.strategy_id = x.id), ''), x.name),
		spec = COALESCE((SELECT w.strategy_spec FROM sv w WHERE w.strategy_id = x.id), x.spec),
		status = COALESCE(NULLIF((SELECT w.strategy_status FROM sv w WHERE w.strategy_id = x.id), ''), x.status),
		backtest_status = COALESCE(NULLIF((SELECT w.strategy_backtest FROM sv w WHERE w.strategy_id = x.id), ''), x.backtest_status),
		updated_at = $14
	WHERE x.user_id = EXCLUDED.user_id
	RETURNING x.id
), ss AS (
	UPDATE sessions y SET title = sv.title, locale = sv.locale, phase = sv.phase, status = sv.status,
		artifacts = sv.artifacts, metadata = sv.metadata, previous_response_id = sv.previous_response_id, updated_at = $14
	FROM sv JOIN u ON u.id = sv.message_id AND u.session_id = sv.session_id
	WHERE y.id = u.session_id AND (sv.strategy_id = '' OR sv.strategy_id IN (SELECT id FROM st))
)` + commitSelect + `
UNION ALL SELECT r.message_id, true FROM r`

// The parts of commitEventsPG and commitSettlingPG, in order: the batch's message rows
// (v); the UPDATE that advances and fences them (u), open for a further condition; the
// events, MCP calls and traces of the rows it wrote; and what the statement returns, each
// written message with a notification (and, settling, each refused one), which the delta
// statements return too.
const (
	commitMessages = `
WITH v AS (
	SELECT v.*, r.first FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bool[], $5::text[], $6::text[],
		$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[])
		AS v(id, seq, status, fin, content, response_id, tool_calls, genui, state_patch, validation, usage, error, metadata)
	JOIN unnest(string_to_array($16::text, E'\x1e'), $17::bigint[]) AS r(id, first) ON r.id = v.id -- its run's first seq
)`
	commitUpdate = `, u AS (
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
	WHERE m.id = v.id AND m.owner = $15 AND ` + runningAssistantM + `
		AND m.last_event_id < v.first`
	commitRows = `
	RETURNING m.id, v.seq, m.session_id, m.watched
), i AS (
	INSERT INTO message_event_runs (message_id, seq, names, data, times)
	SELECT e.message_id, e.seq, e.names, COALESCE(e.data, ''), e.times -- a lone empty text splits to no element
	FROM unnest(string_to_array($16::text, E'\x1e'), $17::bigint[], string_to_array($18::text, E'\x1e'),
		string_to_array($19::text, E'\x1e'), string_to_array($20::text, E'\x1e'))
		AS e(message_id, seq, names, data, times)
	WHERE e.message_id IN (SELECT id FROM u)
), c AS (
	INSERT INTO mcp_calls (` + mcpCallColumns + `)
	SELECT c.id, c.message_id, u.session_id, c.server_label, c.name, c.arguments, c.output, c.error,
		c.status, c.duration_ms, c.created_at, c.attempt, c.outcome
	FROM unnest($21::text[], $22::text[], $23::text[], $24::text[], $25::text[], $26::text[], $27::text[],
		$28::text[], $29::bigint[], $30::timestamptz[], $31::int[], $32::text[])
		AS c(id, message_id, server_label, name, arguments, output, error, status, duration_ms, created_at, attempt, outcome)
	JOIN u ON u.id = c.message_id
), t AS (
	INSERT INTO message_traces (message_id, attempt, seq, method, url, headers, body, truncated, sent_at)
	SELECT t.message_id, t.attempt, t.seq, COALESCE(t.method, ''), COALESCE(t.url, ''), t.headers,
		COALESCE(t.body, ''), t.truncated, t.sent_at -- a lone empty text splits to no element
	FROM unnest(string_to_array($33::text, E'\x1e'), $34::int[], $35::int[], string_to_array($36::text, E'\x1e'),
		string_to_array($37::text, E'\x1e'), string_to_array($38::text, E'\x1e'), string_to_array($39::text, E'\x1e'),
		$40::bool[], string_to_array($41::text, E'\x1e')::timestamptz[])
		AS t(message_id, attempt, seq, method, url, headers, body, truncated, sent_at)
	WHERE t.message_id IN (SELECT id FROM u)
)`
	commitSelect = `
SELECT u.id, false FROM u LEFT JOIN LATERAL (
	SELECT pg_notify('` + notifyChannel + `', u.id || ':' || u.seq) WHERE u.watched -- followed elsewhere: Store.Watch
) AS n ON true`
)

// commitPG runs the batch's commit statement (commitStatement) and returns
// the ids it wrote and those it refused: one statement, one round trip, whatever the batch
// holds (the event log's one committer serves every turn, so a transaction of several
// statements here held up all of them).
func (s *Store) commitPG(ctx context.Context, owner string, events []Event, msgs []msgBatch) (owned, refused map[string]bool, err error) {
	query, args, err := commitStatement(owner, events, msgs)
	if err != nil {
		return nil, nil, err
	}
	stmt, err := s.prepared(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	return scanCommitted(stmt.QueryContext(ctx, args...))
}

// byMessageID returns events with the messages' runs in id order, each message's events
// as they were (checkStatuses saw that they follow each other), copying only a batch that
// is not in that order already. A commit's UPDATE locks the message rows in the order its
// plan joins them, which is the runs' order (the function scan of the runs probes the
// messages), and RenewLeases locks them in id order: runs in batch order locked two
// messages the other way round now and then, and PostgreSQL broke the deadlock after
// deadlock_timeout, a second in which every stream of the replica waited, each such turn's
// first delta over a second late.
func byMessageID(events []Event) []Event {
	cmp := func(a, b Event) int { return strings.Compare(a.MessageID, b.MessageID) }
	if slices.IsSortedFunc(events, cmp) {
		return events
	}
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, cmp)
	return sorted
}

// commitStatement picks the statement for a batch, the leanest that writes all of it, and
// lays the batch out as its parameters, its runs in message id order (byMessageID).
func commitStatement(owner string, events []Event, msgs []msgBatch) (string, []any, error) {
	events = byMessageID(events)
	if onlyDeltas(msgs) {
		if len(msgs) == 1 {
			args, err := oneDeltaArgs(owner, events, msgs[0])
			return commitDeltaPG, args, err
		}
		args, err := deltaArgs(owner, events, msgs)
		return commitDeltasPG, args, err
	}
	args, err := commitArgs(owner, events, msgs)
	if len(args) > commitColumns {
		return commitSettlingPG, args, err
	}
	return commitEventsPG, args, err
}

// onlyDeltas reports whether a batch ends no message and carries no traces, so that a
// delta statement (commitDeltaPG, commitDeltasPG) writes all of it.
func onlyDeltas(msgs []msgBatch) bool {
	for _, m := range msgs {
		if m.finish != nil || len(m.traces) > 0 || (m.status != "" && m.status != StatusStreaming) {
			return false
		}
	}
	return true
}

// deltaArgs lays a batch out as commitDeltasPG's parameters: its runs, then its messages.
func deltaArgs(owner string, events []Event, msgs []msgBatch) ([]any, error) {
	runs, err := runArrays(events)
	if err != nil {
		return nil, err
	}
	ids, seqs, statuses := make([]string, len(msgs)), make([]int64, len(msgs)), make([]string, len(msgs))
	for i, m := range msgs {
		ids[i], seqs[i], statuses[i] = m.id, m.maxSeq, m.status
	}
	return append(runs, pq.Array(ids), pq.Array(seqs), pq.Array(statuses), owner), nil
}

// oneDeltaArgs lays the batch of one message m out as commitDeltaPG's parameters: its
// row's fence and advance, then its one run.
func oneDeltaArgs(owner string, events []Event, m msgBatch) ([]any, error) {
	runs, err := runRows(events)
	if err != nil {
		return nil, err
	}
	r := runs[0] // one message's events, side by side (checkStatuses): one run
	return []any{m.id, m.firstSeq, m.maxSeq, m.status, owner, r.names, r.data, r.times}, nil
}

// scanCommitted collects what a commit statement returns: each message it wrote, and each it
// refused (flagged).
func scanCommitted(rows *sql.Rows, err error) (owned, refused map[string]bool, _ error) {
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	owned = make(map[string]bool)
	for rows.Next() {
		var id string
		var isRefused bool
		if err := rows.Scan(&id, &isRefused); err != nil {
			return nil, nil, err
		}
		if isRefused {
			if refused == nil {
				refused = make(map[string]bool)
			}
			refused[id] = true
			continue
		}
		owned[id] = true
	}
	return owned, refused, rows.Err()
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
	evArgs, err := runArrays(events)
	if err != nil {
		return nil, err
	}
	args := []any{pq.Array(ids), pq.Array(seqs), pq.Array(statuses), pq.Array(fins)}
	for _, col := range text {
		args = append(args, nullableTexts(col))
	}
	recArgs, err := recordArrays(msgs)
	if err != nil {
		return nil, err
	}
	args = append(append(append(args, now(), owner), evArgs...), recArgs...)
	if !slices.ContainsFunc(msgs, msgBatch.settles) {
		return args, nil
	}
	setArgs, err := settlementArrays(msgs)
	if err != nil {
		return nil, err
	}
	return append(args, setArgs...), nil
}

// commitColumns is the number of commitEventsPG's parameters; commitSettlingPG takes
// settlementColumns more.
const commitColumns = 41

// recordArrays lays out the records of the messages a batch ends (store.TurnRecords) and
// the traces its events carry (Event.Traces) as commitEventsPG's arrays: twelve for the MCP calls, nine for the traces. As on SQLite, the
// calls are filled in where they are (ids, times, message, session, outcome); the session
// stored is the message row's.
func recordArrays(msgs []msgBatch) ([]any, error) {
	var calls []MCPCall
	var traces []Trace
	at := now()
	for _, m := range msgs {
		for _, t := range m.traces {
			t.MessageID, t.SentAt, t.Headers = m.id, orNowAt(t.SentAt, at), emptyObject(t.Headers)
			traces = append(traces, t)
		}
		f := m.finish
		if f == nil || f.Records == nil {
			continue
		}
		mine := f.Records.Calls
		for i := range mine {
			mine[i].MessageID, mine[i].SessionID, mine[i].Outcome = m.id, cmpOr(mine[i].SessionID, f.SessionID), f.Status
		}
		if err := prepareMCPCalls(mine); err != nil {
			return nil, fmt.Errorf("message %s: %w", m.id, err)
		}
		calls = append(calls, mine...)
		for _, t := range f.Records.Traces {
			t.MessageID, t.SentAt, t.Headers = m.id, orNowAt(t.SentAt, at), emptyObject(t.Headers)
			traces = append(traces, t)
		}
	}
	if len(calls) == 0 && len(traces) == 0 {
		// Most batches end no message: NULL arrays unnest to no rows, with nothing to
		// allocate or encode on every commit.
		return make([]any, callColumns-1+traceColumns), nil // the calls' session comes from the row
	}
	callArgs, err := callArrays(calls)
	if err != nil {
		return nil, err
	}
	traceArgs, err := traceArrays(traces)
	if err != nil {
		return nil, err
	}
	return append(callArgs, traceArgs...), nil
}

// jsonText is j as a text array element, checked as the JSON type's Value checks it.
func jsonText(j JSON) (sql.NullString, error) {
	v, err := j.Value()
	if v == nil || err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: v.(string), Valid: true}, nil
}

// callArrays is calls as twelve arrays, in commitEventsPG's order.
func callArrays(calls []MCPCall) ([]any, error) {
	n := len(calls)
	ids, msgs, labels, names, args := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]sql.NullString, n)
	outputs, errs, statuses, outcomes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	durations, times, attempts := make([]int64, n), make([]string, n), make([]int64, n)
	for i, c := range calls {
		ids[i], msgs[i], labels[i], names[i] = c.ID, c.MessageID, c.ServerLabel, c.Name
		var err error
		if args[i], err = jsonText(c.Arguments); err != nil {
			return nil, fmt.Errorf("message %s: call %s: arguments: %w", c.MessageID, c.Name, err)
		}
		outputs[i], errs[i], statuses[i], outcomes[i] = c.Output, c.Error, string(c.Status), c.Outcome
		durations[i], times[i], attempts[i] = c.DurationMS, c.CreatedAt.Format(pgTime), int64(c.Attempt)
	}
	return []any{pq.Array(ids), pq.Array(msgs), pq.Array(labels), pq.Array(names), nullableTexts(args), pq.Array(outputs),
		pq.Array(errs), pq.Array(statuses), pq.Array(durations), pq.Array(times), pq.Array(attempts), pq.Array(outcomes)}, nil
}

// traceArrays is traces as commitEventsPG's nine parameters: the texts and times as
// textLists (a body is a request's JSON, kilobytes of quotes that an array literal escaped
// one by one), the numbers and flags as arrays.
func traceArrays(traces []Trace) ([]any, error) {
	n := len(traces)
	size := 0
	for _, t := range traces {
		size += len(t.Body) + 1
	}
	msgs, methods, urls, headers, bodies, times := newTextList(n*37), newTextList(n*5), newTextList(n*64), newTextList(n*64), newTextList(size), newTextList(n*28)
	attempts, seqs, truncated := make([]int64, n), make([]int64, n), make([]bool, n)
	for i, t := range traces {
		attempts[i], seqs[i], truncated[i] = int64(t.Attempt), int64(t.Seq), t.Truncated
		h, err := jsonText(t.Headers)
		if err != nil {
			return nil, fmt.Errorf("message %s: trace %d/%d: headers: %w", t.MessageID, t.Attempt, t.Seq, err)
		}
		times.addTime(t.SentAt)
		err = errors.Join(msgs.addString(t.MessageID), methods.addString(t.Method), urls.addString(textOnly(t.URL)),
			headers.addString(h.String), bodies.addString(textOnly(t.Body)))
		if err != nil {
			return nil, fmt.Errorf("message %s: trace %d/%d: %w", t.MessageID, t.Attempt, t.Seq, err)
		}
	}
	return []any{msgs, pq.Array(attempts), pq.Array(seqs), methods, urls, headers, bodies, pq.Array(truncated), times}, nil
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
