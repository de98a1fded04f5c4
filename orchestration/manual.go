package orchestration

import (
	"context"
	"fmt"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

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
	if reason == "" {
		reason = "moved by the user"
	}
	m := move{from: from, to: target, reason: reason, evidence: map[string]any{"source": "manual"}}
	return sess, o.moveWithState(ctx, sess, m)
}

// ConfirmStrategy serves the confirm route: the strategy becomes confirmed, and with
// advance the strategy phase's move to stress_test is requested; it happens at once when
// the phase's conditions hold, otherwise as soon as they do.
func (o *Orchestrator) ConfirmStrategy(ctx context.Context, userID, strategyID string, advance bool) (*store.Strategy, error) {
	st, err := o.store.GetStrategy(ctx, strategyID, userID)
	if err != nil {
		return nil, err
	}
	sess, err := o.idleSession(ctx, userID, st.SessionID)
	if err != nil {
		return nil, err
	}
	st.Status = "confirmed"
	if err := o.store.UpsertStrategy(ctx, st); err != nil {
		return nil, err
	}
	if sess.Phase != string(phases.Strategy) {
		return st, nil
	}
	return st, o.confirmInSession(ctx, sess, st, advance)
}

func (o *Orchestrator) confirmInSession(ctx context.Context, sess *store.Session, st *store.Strategy, advance bool) error {
	arts, meta, err := decodeState(sess)
	if err != nil {
		return err
	}
	h, _ := o.handlers.For(phases.Strategy)
	block := arts.Fill(string(phases.Strategy), h.InitialArtifacts())
	block["strategy_id"], block["strategy_status"], block["advance_to_stress_test"] = st.ID, "confirmed", advance
	meta.StrategyID = st.ID
	report := h.PostProcess(handlers.PostInput{Artifacts: block})
	if !report.Completed {
		return o.writeState(ctx, sess, arts, meta)
	}
	m := move{from: phases.Strategy, to: report.NextPhase, reason: report.Reason + " (confirmed through the confirm route)",
		evidence: map[string]any{"fields": report.Evidence, "source": "confirm_route", "strategy_id": st.ID}}
	return o.moveWithState(ctx, sess, m)
}

// moveWithState loads the session's state and the last exchanges, then moves it.
func (o *Orchestrator) moveWithState(ctx context.Context, sess *store.Session, m move) error {
	arts, meta, err := decodeState(sess)
	if err != nil {
		return err
	}
	if m.exchanges, err = o.store.LatestMessages(ctx, sess.ID, 4); err != nil {
		return err
	}
	return o.movePhase(ctx, sess, arts, &meta, m)
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

func decodeState(sess *store.Session) (session.Artifacts, session.Metadata, error) {
	arts, err := session.DecodeArtifacts(sess.Artifacts)
	if err != nil {
		return nil, session.Metadata{}, err
	}
	meta, err := session.DecodeMetadata(sess.Metadata)
	return arts, meta, err
}

func (o *Orchestrator) writeState(ctx context.Context, sess *store.Session, arts session.Artifacts, meta session.Metadata) error {
	var err error
	if sess.Artifacts, err = arts.Encode(); err != nil {
		return err
	}
	if sess.Metadata, err = meta.Encode(); err != nil {
		return err
	}
	return o.store.UpdateSession(ctx, sess)
}
