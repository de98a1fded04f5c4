package orchestration

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// settlement is what an accepted reply changes: the applied or rejected patch, the GenUI
// sent, the handler's verdict and the phase move it caused.
type settlement struct {
	toolCalls  []postprocess.ToolRecord
	genui      postprocess.GenUIResult
	applied    json.RawMessage
	rejected   *rejectedPatch
	report     handlers.Report
	change     *PhaseChange
	deployment map[string]any
}

type rejectedPatch struct {
	Patch   json.RawMessage `json:"patch"`
	Reasons []string        `json:"reasons"`
}

// PhaseChange is completed.metadata.phase_change.
type PhaseChange struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// settle applies an accepted reply: the state patch (when the reply is valid and the patch
// keeps the phase's field rules), the strategy row, the handler's verdict, the GenUI with
// its filled-in cards, and the phase move the verdict asks for.
func (o *Orchestrator) settle(t *turn) error {
	p, s := t.plan, &settlement{toolCalls: postprocess.ToolRecords(t.result.ToolCalls)}
	t.settled = s
	if len(t.problems) == 0 { // an invalid reply never applies a patch or moves a phase
		o.applyPatch(t, s)
		if err := o.recordStrategy(t, s); err != nil {
			return err
		}
	}
	if p.handler == nil {
		s.genui = postprocess.GenUIResult{Items: []json.RawMessage{}}
		return nil
	}
	s.report = p.handler.PostProcess(handlers.PostInput{Artifacts: p.block, ToolCalls: toolResults(s.toolCalls)})
	s.genui = postprocess.FinishGenUI(t.outcome.GenUI, postprocess.GenUIContext{
		Allowed: p.handler.AllowedGenUI(), ToolCalls: s.toolCalls, MissingFields: s.report.MissingFields, Reply: t.result.Text,
	})
	if p.phase == phases.Deployment {
		s.deployment = p.block
	}
	if len(t.problems) == 0 && s.report.Completed {
		return o.moveAfterTurn(t, s)
	}
	return o.saveArtifacts(t)
}

func (o *Orchestrator) applyPatch(t *turn, s *settlement) {
	patch := t.outcome.StatePatch
	if len(patch) == 0 {
		return
	}
	merged, err := postprocess.MergePatch(t.plan.block, patch)
	var reasons []string
	if err != nil {
		reasons = []string{err.Error()}
	}
	for _, fe := range phases.CheckArtifacts(t.plan.phase, merged) {
		reasons = append(reasons, fe.String())
	}
	if len(reasons) > 0 {
		s.rejected = &rejectedPatch{Patch: patch, Reasons: reasons}
		o.logger.Info("state patch rejected", "message_id", t.msg.ID, "reasons", reasons)
		return
	}
	t.plan.block, t.plan.artifacts[string(t.plan.phase)], s.applied = merged, merged, patch
}

// recordStrategy creates or updates the strategy row when the reply drafted one (a
// strategy_draft in the patch) or validate_strategy returned a strategy_id, and keeps the
// id in the strategy artifacts and the session metadata.
func (o *Orchestrator) recordStrategy(t *turn, s *settlement) error {
	if t.plan.phase != phases.Strategy {
		return nil
	}
	block := t.plan.block
	id := postprocess.StrategyFromTools(s.toolCalls)
	if id == "" {
		id, _ = block["strategy_id"].(string)
	}
	draft, hasDraft := block["strategy_draft"].(map[string]any)
	if id == "" && !hasDraft {
		return nil
	}
	if id == "" {
		id = uuid.NewString()
	}
	st := &store.Strategy{
		ID: id, UserID: t.msg.UserID, SessionID: t.begun.Session.ID,
		Status: strField(block, "strategy_status"), BacktestStatus: strField(block, "backtest_status"),
	}
	if hasDraft {
		st.Name, _ = draft["name"].(string)
		st.Spec = mustJSON(draft["spec"])
	}
	if err := o.store.UpsertStrategy(t.logCtx(), st); err != nil {
		return fmt.Errorf("orchestration: record strategy: %w", err)
	}
	block["strategy_id"], t.plan.strategyID = id, id
	t.begun.Metadata.StrategyID = id
	return nil
}

// saveArtifacts writes the phase's artifacts and the metadata back to the session (the
// tail persists the session row).
func (o *Orchestrator) saveArtifacts(t *turn) error {
	raw, err := t.plan.artifacts.Encode()
	if err != nil {
		return err
	}
	meta, err := t.begun.Metadata.Encode()
	if err != nil {
		return err
	}
	t.begun.Session.Artifacts, t.begun.Session.Metadata = raw, meta
	return nil
}

func toolResults(calls []postprocess.ToolRecord) []handlers.ToolResult {
	out := make([]handlers.ToolResult, len(calls))
	for i, c := range calls {
		out[i] = handlers.ToolResult{Name: c.Name, Status: c.Status, Output: c.Output}
	}
	return out
}

func strField(m map[string]any, k string) string {
	v, _ := m[k].(string)
	return v
}

// now is the time rows are stamped with.
func now() time.Time { return time.Now().UTC() }
