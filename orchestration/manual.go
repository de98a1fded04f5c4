package orchestration

import (
	"context"
	"fmt"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// manualMoveSkill says, in the session's locale, that the user moved the conversation (the
// manual route without a reason of the user's own).
const manualMoveSkill = "moves/manual"

// MovePhase serves the manual phase route: it moves the user's session to `to` when the
// graph allows it (else an error wrapping [phases.ErrForbiddenMove]) and no generation is
// running in the session (else a [store.GenerationRunningError]).
func (o *Orchestrator) MovePhase(ctx context.Context, userID, sessionID, to, reason string) (*store.Session, error) {
	sess, err := o.idleSession(ctx, userID, sessionID)
	if err != nil {
		return nil, err
	}
	target, err := phases.Parse(to)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", phases.ErrForbiddenMove, err)
	}
	from := phases.Phase(sess.Phase)
	if err := phases.CheckMove(from, target); err != nil {
		return nil, err
	}
	m := moveSpec{from: from, to: target, reason: reason, evidence: map[string]any{"source": "manual"}}
	if reason == "" {
		m.reason, m.reasonSkill = "moved by the user", manualMoveSkill
	}
	return sess, o.moveNow(ctx, sess, m)
}

// ConfirmStrategy serves the confirm route: the strategy becomes confirmed, and the block of
// the phase that owns the confirm step says so too, whatever phase the session is in (a
// waiting carryover from that phase is rendered again, so the model reads it as well).
// When the session is in that phase the handler's rule applies: with advance, the move it
// asks for happens at once when the phase's conditions hold, otherwise as soon as they do.
// The session's artifacts and the strategy row then say the same thing.
func (o *Orchestrator) ConfirmStrategy(ctx context.Context, userID, strategyID string, advance bool) (*store.Strategy, error) {
	st, err := o.store.GetStrategy(ctx, strategyID, userID)
	if err != nil {
		return nil, err
	}
	sess, err := o.idleSession(ctx, userID, st.SessionID)
	if err != nil {
		return nil, err
	}
	st.Status = phases.StrategyConfirmed
	if err := o.store.UpsertStrategy(ctx, st); err != nil {
		return nil, err
	}
	owner, ok := o.handlers.ConfirmPhase()
	if !ok {
		return st, nil
	}
	arts, meta, err := o.decodeState(sess)
	if err != nil {
		return nil, err
	}
	report, _ := o.handlers.Confirm(owner, arts[string(owner)], st.ID, advance)
	arts[string(owner)], meta.StrategyID = report.Artifacts, st.ID
	if err := o.refreshCarryover(ctx, sess.Locale, &meta, owner, report.Artifacts); err != nil {
		return nil, err
	}
	if err := encodeState(sess, arts, meta); err != nil {
		return nil, err
	}
	if !report.Completed || phases.Phase(sess.Phase) != owner {
		return st, o.store.UpdateSession(ctx, sess)
	}
	m := moveSpec{from: owner, to: report.NextPhase, reason: report.Reason, reasonSkill: report.ReasonSkill,
		evidence: map[string]any{"fields": report.Evidence, "source": "confirm_route", "strategy_id": st.ID}}
	return st, o.moveNow(ctx, sess, m)
}

// refreshCarryover renders a waiting carryover from phase from again over its new block.
func (o *Orchestrator) refreshCarryover(ctx context.Context, locale string, meta *session.Metadata, from phases.Phase, block handlers.Artifacts) error {
	b := meta.Carryover
	if b == nil || b.Used || b.From != string(from) {
		return nil
	}
	if err := carryover.Rebuild(o.texts.For(ctx), locale, b, block); err != nil {
		return fmt.Errorf("orchestration: confirm: %w", err)
	}
	return nil
}

// moveNow makes a move outside a turn: the last exchanges for the carryover, then the
// session and its transition row in one transaction.
func (o *Orchestrator) moveNow(ctx context.Context, sess *store.Session, m moveSpec) error {
	arts, meta, err := o.decodeState(sess)
	if err != nil {
		return err
	}
	if m.exchanges, err = o.store.LatestMessages(ctx, sess.ID, 4); err != nil {
		return err
	}
	tr, err := o.move(o.texts.For(ctx), sess, arts, &meta, m)
	if err != nil {
		return err
	}
	if err := encodeState(sess, arts, meta); err != nil {
		return err
	}
	if err := o.store.MovePhase(ctx, sess, tr); err != nil {
		return fmt.Errorf("orchestration: move %s → %s: %w", m.from, m.to, err)
	}
	return nil
}

// idleSession returns the user's session when no generation runs in it.
func (o *Orchestrator) idleSession(ctx context.Context, userID, sessionID string) (*store.Session, error) {
	sess, err := o.store.GetSession(ctx, sessionID, userID)
	if err != nil {
		return nil, err
	}
	msgs, err := o.store.ListMessages(ctx, sessionID, userID)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.Role == "assistant" && (m.Status == store.StatusPending || m.Status == store.StatusStreaming) {
			return nil, &store.GenerationRunningError{MessageID: m.ID}
		}
	}
	return sess, nil
}

// decodeState reads a session's artifacts (every phase's block in place, as a turn would
// write them) and metadata.
func (o *Orchestrator) decodeState(sess *store.Session) (session.Artifacts, session.Metadata, error) {
	arts, err := session.DecodeArtifacts(sess.Artifacts)
	if err != nil {
		return nil, session.Metadata{}, err
	}
	meta, err := session.DecodeMetadata(sess.Metadata)
	return prompt.FillBlocks(o.handlers, arts), meta, err
}
