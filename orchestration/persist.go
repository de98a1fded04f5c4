package orchestration

import (
	"context"
	"encoding/json"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// persist is the carry-over step and the turn's settlement: the session after the turn
// (with its phase move and carryover block when the verdict asks for one, and its title
// when the server names it: AutoTitle) and the strategy the reply recorded. A turn that
// moves the phase writes it now, in a transaction of its own, since phase_changed reports
// the move before completed; any other turn's settlement is returned to ride on its
// completed event, which commits it with the message (store.CommitEvents). (Its MCP calls
// go with the terminal event, as every turn's do.) It returns the phase change it made.
func (o *Orchestrator) persist(t *turn, plan *prompt.Plan, res stream.Result, s *postprocess.Settlement) (*events.PhaseChange, *store.Settlement, error) {
	b := t.begun
	arts, err := plan.Artifacts()
	if err != nil {
		return nil, nil, err
	}
	arts[string(plan.Phase)] = s.Block
	meta := b.Metadata
	sess := *b.Session
	sess.PreviousResponseID = res.ResponseID
	st := &store.Settlement{MessageID: b.Assistant.ID, Owner: o.log.Owner(), Session: &sess}
	name := plan.StrategyName
	if rec := s.Strategy; rec != nil {
		meta.StrategyID = rec.ID
		st.Strategy = strategyRow(rec, b.Assistant.UserID, sess.ID)
		if rec.Name != "" {
			name = rec.Name
		}
	}
	if title, ok := session.AutoTitle(sess.Title, &meta, name, t.text, sess.Locale); ok {
		sess.Title = title
		s.Metadata.SessionTitle = title
	}
	var change *events.PhaseChange
	if s.Move {
		var err error
		if st.Move, change, err = o.moveAfterTurn(plan, &sess, arts, &meta, s, t.text, res.Text, b.Assistant.ID); err != nil {
			return nil, nil, err
		}
	}
	if err := encodeState(&sess, arts, meta); err != nil {
		return nil, nil, err
	}
	if st.Move == nil {
		return change, st, nil
	}
	return change, nil, t.keep(func(ctx context.Context) error { return o.store.SettleTurn(ctx, st) })
}

// moveAfterTurn prepares the move the handler's verdict asks for. A move the graph forbids
// is ignored with a log line.
func (o *Orchestrator) moveAfterTurn(plan *prompt.Plan, sess *store.Session, arts session.Artifacts, meta *session.Metadata,
	s *postprocess.Settlement, userText, reply, messageID string) (*store.Transition, *events.PhaseChange, error) {
	r := s.Report
	if err := phases.CheckMove(plan.Phase, r.NextPhase); err != nil {
		o.logger.Warn("handler asked for a forbidden move; ignored", "session_id", sess.ID, "err", err)
		return nil, nil, nil
	}
	evidence := map[string]any{"fields": r.Evidence}
	if len(s.Metadata.ToolCalls) > 0 {
		evidence["tool_calls"] = toolNames(s.Metadata.ToolCalls)
	}
	exchanges := append(append([]store.Message{}, plan.History...),
		store.Message{Role: "user", Content: userText}, store.Message{Role: "assistant", Content: reply})
	tr, err := o.move(plan.Skills, sess, arts, meta, moveSpec{
		from: plan.Phase, to: r.NextPhase, reason: r.Reason, reasonSkill: r.ReasonSkill, messageID: messageID,
		evidence: evidence, exchanges: exchanges,
	})
	if err != nil {
		return nil, nil, err
	}
	return tr, &events.PhaseChange{From: string(plan.Phase), To: string(r.NextPhase), Reason: r.Reason}, nil
}

// strategyRow is a recorded strategy as its table row.
func strategyRow(rec *handlers.StrategyRecord, userID, sessionID string) *store.Strategy {
	row := &store.Strategy{
		ID: rec.ID, UserID: userID, SessionID: sessionID, Name: rec.Name,
		Status: rec.Status, BacktestStatus: rec.BacktestStatus,
	}
	if rec.Spec != nil {
		row.Spec, _ = json.Marshal(rec.Spec)
	}
	return row
}

// encodeState writes a session's decoded state back into its row.
func encodeState(sess *store.Session, arts session.Artifacts, meta session.Metadata) error {
	var err error
	if sess.Artifacts, err = arts.Encode(); err != nil {
		return err
	}
	sess.Metadata, err = meta.Encode()
	return err
}

func toolNames(calls []store.ToolCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.ServerLabel + "/" + c.Name + ":" + string(c.Status)
	}
	return out
}
