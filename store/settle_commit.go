package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// A completed turn's settlement (the session after the turn, the strategy it recorded) is
// written by the event-log commit that finishes its message (Message.Settlement on the
// terminal event): one commit per turn end instead of a transaction of its own, whose
// fence waited for the group commit that held the message row, and cost the database a
// transaction's work every turn. This file
// holds what that commit does besides its events, on both databases; a settlement with a
// phase move still goes through SettleTurn, a transaction before the terminal event.

// prepareSettlements fills the ids and stamps of the batch's settlements once, before the
// commit lays them out (a commit that is retried keeps the strategy ids it drew).
func prepareSettlements(msgs []msgBatch) {
	at := now()
	for _, m := range msgs {
		if !m.settles() {
			continue
		}
		st := m.finish.Settlement
		st.Session.written(at)
		if st.Strategy != nil && st.Strategy.ID == "" {
			st.Strategy.ID = NewID()
		}
	}
}

// refusedSettlements lists the owner's running messages of a batch whose settlement the
// store refuses (SQLite; PostgreSQL's commitSettlingPG asks the same in its part r): the
// strategy is another user's, or a new strategy names a session that is not the user's.
// The rare refusal is looked at twice; a message that is not the owner's running one is
// lost rather than refused.
func (s *Store) refusedSettlements(ctx context.Context, tx *sqlx.Tx, owner string, msgs []msgBatch) (map[string]bool, error) {
	var refused map[string]bool
	for _, m := range msgs {
		if !m.settles() || m.finish.Settlement.Strategy == nil {
			continue
		}
		ok, err := s.strategyAllowed(ctx, tx, m.finish.Settlement.Strategy)
		if err != nil {
			return nil, fmt.Errorf("message %s: %w", m.id, err)
		}
		if ok {
			continue
		}
		var one int
		err = tx.GetContext(ctx, &one, s.db.Rebind(`SELECT 1 FROM messages WHERE `+fenced), m.id, owner)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue // lost, whatever its settlement
		case err != nil:
			return nil, fmt.Errorf("message %s: %w", m.id, err)
		}
		if refused == nil {
			refused = make(map[string]bool)
		}
		refused[m.id] = true
	}
	return refused, nil
}

// strategyAllowed reports whether st may be written as UpsertStrategy writes it: an
// existing row must be st.UserID's, and a new one may name only a session of st.UserID.
func (s *Store) strategyAllowed(ctx context.Context, tx *sqlx.Tx, st *Strategy) (bool, error) {
	var user string
	err := tx.GetContext(ctx, &user, s.db.Rebind(`SELECT user_id FROM strategies WHERE id = ?`), st.ID)
	switch {
	case err == nil:
		return user == st.UserID, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, err
	}
	err = s.checkStrategySession(ctx, tx, st)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// writeSettlement writes the settlement of a message the batch has just finished, inside
// its transaction (SQLite; on PostgreSQL it is part of commitSettlingPG).
func (s *Store) writeSettlement(ctx context.Context, tx *sqlx.Tx, m msgBatch) error {
	if !m.settles() {
		return nil
	}
	st := m.finish.Settlement
	if st.Strategy != nil {
		stored, err := s.upsertStrategyTx(ctx, tx, st.Strategy)
		if err != nil {
			return fmt.Errorf("message %s: settle strategy: %w", m.id, err)
		}
		*st.Strategy = *stored
	}
	if err := s.updateSession(ctx, tx, st.Session); err != nil {
		return fmt.Errorf("message %s: settle session: %w", m.id, err)
	}
	return nil
}

// settlementColumns is the number of commitSettlingPG's settlement parameters.
const settlementColumns = 17

// settlementArrays lays out the batch's settlements (at least one) as commitSettlingPG's
// sixteen arrays, one element per settling message, and their number. The arrays: the
// message's id, the session's id, user and seven written fields, then the strategy's id
// ("" for none), session, name, spec (NULL keeps the stored one), status and backtest
// status as given (the statement fills an insert's defaults and keeps what an update
// leaves empty). JSON texts travel as textLists; the session's plain texts (a title comes
// from the user's words) as array literals.
//
// The number is the statement's LIMIT on the settlements: no row is ever cut by it, but a
// LIMIT that is a parameter makes the generic plan guess a tenth of unnest's 10 rows. With
// the 10 rows, the settlements' part of that plan cost ten times what a batch's own plan
// did, so PostgreSQL planned the statement anew at every commit, which tripled a lone
// commit's time; TestCommitIsPlannedOnce watches it.
func settlementArrays(msgs []msgBatch) ([]any, error) {
	var ids, sessions, users, titles, locales, phases, statuses, responses []string
	var strategies, stratSessions, names, stratStatuses, backtests []string
	artifacts, metadata, specs := newTextList(0), newTextList(0), newTextList(0)
	for _, m := range msgs {
		if !m.settles() {
			continue
		}
		st := m.finish.Settlement
		sess := st.Session
		ids, sessions, users = append(ids, m.id), append(sessions, sess.ID), append(users, sess.UserID)
		titles, locales, phases = append(titles, sess.Title), append(locales, sess.Locale), append(phases, sess.Phase)
		statuses, responses = append(statuses, sess.Status), append(responses, sess.PreviousResponseID)
		strat := st.Strategy
		if strat == nil {
			strat = &Strategy{}
		}
		strategies, stratSessions, names = append(strategies, strat.ID), append(stratSessions, strat.SessionID), append(names, strat.Name)
		stratStatuses, backtests = append(stratStatuses, strat.Status), append(backtests, strat.BacktestStatus)
		var spec []byte // NULL: keep the stored spec, or {} for a new row
		if !strat.Spec.IsNull() {
			spec = strat.Spec
		}
		if err := errors.Join(sess.Artifacts.check(), sess.Metadata.check(), strat.Spec.check(),
			artifacts.add(sess.Artifacts), metadata.add(sess.Metadata), specs.add(spec)); err != nil {
			return nil, fmt.Errorf("message %s: settlement: %w", m.id, err)
		}
	}
	return []any{pq.Array(ids), pq.Array(sessions), pq.Array(users), pq.Array(titles), pq.Array(locales),
		pq.Array(phases), pq.Array(statuses), artifacts, metadata, pq.Array(responses),
		pq.Array(strategies), pq.Array(stratSessions), pq.Array(names), specs, pq.Array(stratStatuses), pq.Array(backtests),
		len(ids)}, nil
}
