// Package manual is the phase routes a user calls outside a turn: moving a session to
// another phase (POST /sessions/{id}/phase) and confirming a strategy (POST
// /strategies/{id}/confirm), which may move it too. A move is made as a turn's is
// ([finish.Move]) and written with its audit row in one transaction; neither route runs
// while a generation does in the session.
package manual

import (
	"context"
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/orchestration/finish"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// moveSkill says, in the session's locale, that the user moved the conversation (the
// manual route without a reason of the user's own).
const moveSkill = "moves/manual"

// Store is what the manual routes read and write.
type Store interface {
	GetSession(ctx context.Context, id, userID string) (*store.Session, error)
	ListMessages(ctx context.Context, sessionID, userID string) ([]store.Message, error)
	LatestMessages(ctx context.Context, sessionID string, n int) ([]store.Message, error)
	UpdateSession(ctx context.Context, s *store.Session) error
	MovePhase(ctx context.Context, s *store.Session, t *store.Transition) error
	GetStrategy(ctx context.Context, id, userID string) (*store.Strategy, error)
	UpsertStrategy(ctx context.Context, s *store.Strategy) error
}

// Handlers are the phases' handlers: their blocks, and the confirm route's rule.
type Handlers interface {
	prompt.Handlers
	ConfirmPhase() (phases.Phase, bool)
	Confirm(p phases.Phase, block handlers.Artifacts, strategyID string, advance bool) (handlers.Report, bool)
}

// Texts gives the prompt texts in force (stored versions over the embedded files).
type Texts interface {
	For(ctx context.Context) handlers.Skills
}

// Routes serves the manual phase routes.
type Routes struct {
	store    Store
	handlers Handlers
	texts    Texts
	moved    func(from, to string) // told of each move made (metrics)
}

// New returns the routes over st; moved is told of each move they make.
func New(st Store, hs Handlers, texts Texts, moved func(from, to string)) *Routes {
	return &Routes{store: st, handlers: hs, texts: texts, moved: moved}
}

// MovePhase moves the user's session to `to` when the graph allows it (else an error
// wrapping [phases.ErrForbiddenMove]) and no generation runs in the session (else a
// [store.GenerationRunningError]).
func (r *Routes) MovePhase(ctx context.Context, userID, sessionID, to, reason string) (*store.Session, error) {
	sess, err := r.idleSession(ctx, userID, sessionID)
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
	m := finish.Move{From: from, To: target, Reason: reason, Evidence: map[string]any{"source": "manual"}}
	if reason == "" {
		m.Reason, m.ReasonSkill = "moved by the user", moveSkill
	}
	return sess, r.moveNow(ctx, sess, m)
}

// Confirmation is the confirm route's answer: the strategy as stored, and how the
// strategy phase's latest backtest meets its thresholds (nil when none are set), in the
// session's locale, so a client learns at once why a confirmed strategy does not move on.
type Confirmation struct {
	*store.Strategy
	StopCriteria *handlers.StopCriteria `json:"stop_criteria,omitempty"`
}

// ConfirmStrategy confirms a strategy, and the block of the phase that owns the confirm
// step says so too, whatever phase the session is in (a waiting carryover from that phase
// is rendered again, so the model reads it as well). When the session is in that phase the
// handler's rule applies: with advance, the move it asks for happens at once when the
// phase's conditions hold, otherwise as soon as they do. The session's artifacts and the
// strategy row then say the same thing.
func (r *Routes) ConfirmStrategy(ctx context.Context, userID, strategyID string, advance bool) (*Confirmation, error) {
	st, err := r.store.GetStrategy(ctx, strategyID, userID)
	if err != nil {
		return nil, err
	}
	sess, err := r.idleSession(ctx, userID, st.SessionID)
	if err != nil {
		return nil, err
	}
	st.Status = phases.StrategyConfirmed
	if err := r.store.UpsertStrategy(ctx, st); err != nil {
		return nil, err
	}
	owner, ok := r.handlers.ConfirmPhase()
	if !ok {
		return &Confirmation{Strategy: st}, nil
	}
	arts, meta, err := r.decodeState(sess)
	if err != nil {
		return nil, err
	}
	report, _ := r.handlers.Confirm(owner, arts[string(owner)], st.ID, advance)
	c := &Confirmation{Strategy: st}
	if c.StopCriteria, err = handlers.Explain(r.texts.For(ctx), sess.Locale, report.Checks); err != nil {
		return nil, fmt.Errorf("manual: confirm: %w", err)
	}
	arts[string(owner)], meta.StrategyID = report.Artifacts, st.ID
	if err := r.refreshCarryover(ctx, sess.Locale, &meta, owner, report.Artifacts); err != nil {
		return nil, err
	}
	if err := finish.EncodeState(sess, arts, meta); err != nil {
		return nil, err
	}
	if !report.Completed || phases.Phase(sess.Phase) != owner {
		return c, r.store.UpdateSession(ctx, sess)
	}
	m := finish.Move{From: owner, To: report.NextPhase, Reason: report.Reason, ReasonSkill: report.ReasonSkill,
		Evidence: map[string]any{"fields": report.Evidence, "source": "confirm_route", "strategy_id": st.ID}}
	return c, r.moveNow(ctx, sess, m)
}

// refreshCarryover renders a waiting carryover from phase from again over its new block.
func (r *Routes) refreshCarryover(ctx context.Context, locale string, meta *session.Metadata, from phases.Phase, block handlers.Artifacts) error {
	b := meta.Carryover
	if b == nil || b.Used || b.From != string(from) {
		return nil
	}
	if err := carryover.Rebuild(r.texts.For(ctx), locale, b, block); err != nil {
		return fmt.Errorf("manual: confirm: %w", err)
	}
	return nil
}

// moveNow makes a move: the last exchanges for the carryover, then the session and its
// transition row in one transaction.
func (r *Routes) moveNow(ctx context.Context, sess *store.Session, m finish.Move) error {
	arts, meta, err := r.decodeState(sess)
	if err != nil {
		return err
	}
	if m.Exchanges, err = r.store.LatestMessages(ctx, sess.ID, 4); err != nil {
		return err
	}
	tr, err := m.Apply(r.texts.For(ctx), r.handlers, sess, arts, &meta, time.Now().UTC())
	if err != nil {
		return err
	}
	if err := finish.EncodeState(sess, arts, meta); err != nil {
		return err
	}
	if err := r.store.MovePhase(ctx, sess, tr); err != nil {
		return fmt.Errorf("manual: move %s → %s: %w", m.From, m.To, err)
	}
	r.moved(string(m.From), string(m.To))
	return nil
}

// idleSession returns the user's session when no generation runs in it.
func (r *Routes) idleSession(ctx context.Context, userID, sessionID string) (*store.Session, error) {
	sess, err := r.store.GetSession(ctx, sessionID, userID)
	if err != nil {
		return nil, err
	}
	msgs, err := r.store.ListMessages(ctx, sessionID, userID)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.Role == store.RoleAssistant && (m.Status == store.StatusPending || m.Status == store.StatusStreaming) {
			return nil, &store.GenerationRunningError{MessageID: m.ID}
		}
	}
	return sess, nil
}

// decodeState reads a session's artifacts (every phase's block in place, as a turn would
// write them) and metadata.
func (r *Routes) decodeState(sess *store.Session) (session.Artifacts, session.Metadata, error) {
	arts, err := session.DecodeArtifacts(sess.Artifacts)
	if err != nil {
		return nil, session.Metadata{}, err
	}
	meta, err := session.DecodeMetadata(sess.Metadata)
	return prompt.FillBlocks(r.handlers, arts), meta, err
}
