package store

import (
	"context"
	"database/sql"
	"fmt"
)

// settleStrategyPG is SettleTurn for a turn that records a strategy and moves no phase
// (most strategy-phase turns), as one statement on PostgreSQL: the fence, the strategy's
// upsert and the session's update. As a transaction it was seven round trips (BEGIN, the
// strategy's lock, the session check, its insert or update, the session, the fence,
// COMMIT), each statement parsed and planned anew; this is one, prepared once per
// connection.
//
// The fence (f) locks the message row and the session row, and every write hangs on it:
// a turn that lost its lease, or whose session is gone, writes nothing (fenced is 0, and
// unsettled says which). With the session row locked, its update cannot miss once the
// strategy is written. The strategy is inserted, or merged into the row with its id as
// UpsertStrategy describes (an empty name, status or backtest status and a null spec keep
// the stored value; session and creation time are never changed), only if that row is the
// user's ($4); a new row must name a session of the user, or none. The session is written
// only if the strategy was; the strategy columns come back NULL when it was not.
//
// Arguments: $1 message id, $2 owner; $3 strategy id, $4 user, $5 session (empty for none),
// $6–$9 the insert's name, spec, status and backtest status, $10 now; $11–$14 the update's
// name, spec (NULL to keep), status and backtest status (empty to keep); $15–$22 the session's
// title, locale, phase, status, artifacts, metadata, previous response id and id.
const settleStrategyPG = `
WITH f AS (
	SELECT 1
	FROM (SELECT 1 FROM messages WHERE id = $1 AND owner = $2 AND ` + runningAssistant + `) AS m,
		(SELECT 1 FROM sessions WHERE id = $22 AND user_id = $4) AS ss
	FOR NO KEY UPDATE
), s AS (
	INSERT INTO strategies AS t (id, user_id, session_id, name, spec, status, backtest_status, created_at, updated_at)
	SELECT $3, $4, NULLIF($5, ''), $6, $7, $8, $9, $10, $10 FROM f
	WHERE $5 = ''
		OR EXISTS (SELECT 1 FROM sessions WHERE id = $5 AND user_id = $4)
		OR EXISTS (SELECT 1 FROM strategies WHERE id = $3)
	ON CONFLICT (id) DO UPDATE SET
		name = COALESCE(NULLIF($11, ''), t.name),
		spec = COALESCE($12, t.spec),
		status = COALESCE(NULLIF($13, ''), t.status),
		backtest_status = COALESCE(NULLIF($14, ''), t.backtest_status),
		updated_at = $10
	WHERE t.user_id = $4
	RETURNING t.id, t.user_id, COALESCE(t.session_id, '') AS session_id, t.name, t.spec, t.status,
		t.backtest_status, t.created_at, t.updated_at
), u AS (
	UPDATE sessions SET title = $15, locale = $16, phase = $17, status = $18, artifacts = $19,
		metadata = $20, previous_response_id = $21, updated_at = $10
	WHERE id = $22 AND user_id = $4 AND EXISTS (SELECT 1 FROM s)
	RETURNING 1
)
SELECT (SELECT count(*) FROM f) AS fenced, (SELECT count(*) FROM u) AS sessions,
	s.id, s.user_id, s.session_id, s.name, s.spec, s.status, s.backtest_status, s.created_at, s.updated_at
FROM (SELECT 1) AS one LEFT JOIN s ON true`

// settleStrategy writes st (a strategy, a session, no move) with settleStrategyPG and
// writes the stored strategy back into st.Strategy.
func (s *Store) settleStrategy(ctx context.Context, st *Settlement) error {
	args := settleStrategyArgs(st)
	stmt, err := s.prepared(ctx, settleStrategyPG)
	if err != nil {
		return fmt.Errorf("store: settle turn: %w", err)
	}
	var fenced, sessions int
	var id, user, session, name, status, backtest sql.NullString
	var created, updated sql.NullTime
	var spec JSON
	err = stmt.QueryRowContext(ctx, args...).Scan(&fenced, &sessions,
		&id, &user, &session, &name, &spec, &status, &backtest, &created, &updated)
	if err != nil {
		return fmt.Errorf("store: settle turn: %w", err)
	}
	switch {
	case fenced == 0:
		return s.unsettled(ctx, st)
	case !id.Valid:
		return fmt.Errorf("store: settle turn: strategy %s: %w", st.Strategy.ID, ErrNotFound)
	case sessions == 0:
		// Not reachable while f holds the session row: a bug, said as one.
		return fmt.Errorf("store: settle turn: strategy %s written without session %s", id.String, st.Session.ID)
	}
	row := Strategy{ID: id.String, UserID: user.String, SessionID: session.String, Name: name.String, Spec: spec,
		Status: status.String, BacktestStatus: backtest.String, CreatedAt: created.Time, UpdatedAt: updated.Time}
	row.utc()
	*st.Strategy = row
	return nil
}

// settleStrategyArgs lays st out as settleStrategyPG's arguments, with the insert's
// defaults filled as newStrategyRow fills them.
func settleStrategyArgs(st *Settlement) []any {
	strat, sess := st.Strategy, st.Session
	if strat.ID == "" {
		strat.ID = NewID()
	}
	ins := newStrategyRow(strat)
	at := now()
	var spec any // NULL: keep the stored spec
	if !strat.Spec.IsNull() {
		spec = strat.Spec
	}
	args := []any{
		st.MessageID, st.Owner,
		strat.ID, strat.UserID, strat.SessionID, ins.Name, ins.Spec, ins.Status, ins.BacktestStatus, at,
		strat.Name, spec, strat.Status, strat.BacktestStatus,
	}
	return append(append(args, sess.written(at)...), sess.ID)
}
