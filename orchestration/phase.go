package orchestration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// move is one phase move to make.
type move struct {
	from, to  phases.Phase
	reason    string
	messageID string         // the message that caused it ("" for the manual route)
	evidence  map[string]any // which fields, which tool call
	exchanges []store.Message
}

// movePhase moves sess and records the move in one transaction: the transition row, the
// new phase's artifacts (initial values, keeping the ids found so far), the carryover block
// for the new phase's first turn, and a fresh upstream chain.
func (o *Orchestrator) movePhase(ctx context.Context, sess *store.Session, arts session.Artifacts, meta *session.Metadata, m move) error {
	text, err := o.carryoverText(ctx, sess.Locale, arts[string(m.from)], m)
	if err != nil {
		return err
	}
	meta.Carryover = &carryover.Block{From: string(m.from), To: string(m.to), Text: text, CreatedAt: now()}
	o.enterPhase(arts, m.to)
	sess.Phase, sess.PreviousResponseID = string(m.to), ""
	if m.to == phases.Completed {
		sess.Status = "completed"
	}
	if sess.Artifacts, err = arts.Encode(); err != nil {
		return err
	}
	if sess.Metadata, err = meta.Encode(); err != nil {
		return err
	}
	tr := &store.Transition{SessionID: sess.ID, FromPhase: string(m.from), ToPhase: string(m.to), Reason: m.reason, MessageID: m.messageID, Metadata: mustJSON(m.evidence)}
	if err := o.store.MovePhase(ctx, sess, tr); err != nil {
		return fmt.Errorf("orchestration: move %s → %s: %w", m.from, m.to, err)
	}
	o.logger.Info("phase moved", "session_id", sess.ID, "from", m.from, "to", m.to, "reason", m.reason)
	return nil
}

// enterPhase resets the new phase's block to its initial values, keeping only the ids and
// the strategy draft it had: a strategy sent back for revision must be confirmed again, and
// a second stress test decides afresh.
func (o *Orchestrator) enterPhase(arts session.Artifacts, to phases.Phase) {
	h, ok := o.handlers.For(to)
	if !ok {
		return
	}
	fresh := h.InitialArtifacts()
	for k, v := range arts[string(to)] {
		if strings.HasSuffix(k, "_id") || k == "strategy_draft" {
			fresh[k] = v
		}
	}
	arts[string(to)] = fresh
}

// carryoverText renders the carryover skill: the old phase's artifacts and the last
// exchanges, trimmed.
func (o *Orchestrator) carryoverText(ctx context.Context, locale string, old map[string]any, m move) (string, error) {
	tmpl, err := o.skillsFor(ctx).Text("carryover", locale)
	if err != nil {
		return "", fmt.Errorf("orchestration: carryover: %w", err)
	}
	arts, _ := json.Marshal(old)
	return prompt.Fill(tmpl, map[string]string{
		"from": string(m.from), "to": string(m.to), "reason": m.reason,
		"artifacts": string(arts), "exchanges": carryover.Exchanges(m.exchanges, 4, 300),
	}), nil
}

// moveAfterTurn makes the move the phase handler asked for at the end of a turn. A move the
// graph forbids is ignored with a log line.
func (o *Orchestrator) moveAfterTurn(t *turn, s *settlement) error {
	from, to := t.plan.phase, s.report.NextPhase
	if err := phases.CheckMove(from, to); err != nil {
		o.logger.Warn("handler asked for a forbidden move; ignored", "session_id", t.begun.Session.ID, "err", err)
		return o.saveArtifacts(t)
	}
	evidence := map[string]any{"fields": s.report.Evidence}
	if len(s.toolCalls) > 0 {
		evidence["tool_calls"] = toolNames(s.toolCalls)
	}
	exchanges := append(append([]store.Message{}, t.history...),
		store.Message{Role: "user", Content: t.userText}, store.Message{Role: "assistant", Content: t.result.Text})
	m := move{from: from, to: to, reason: s.report.Reason, messageID: t.msg.ID, evidence: evidence, exchanges: exchanges}
	if err := o.movePhase(t.logCtx(), t.begun.Session, t.plan.artifacts, &t.begun.Metadata, m); err != nil {
		return err
	}
	s.change = &PhaseChange{From: string(from), To: string(to), Reason: s.report.Reason}
	return nil
}

func toolNames(calls []postprocess.ToolRecord) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.ServerLabel + "/" + c.Name + ":" + c.Status
	}
	return out
}
