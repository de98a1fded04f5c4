package postprocess

import (
	"encoding/json"

	"github.com/phaseflow/phaseflow/genui"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// Input is what settling a turn needs: the plan's phase and block, and the attempts'
// outcome.
type Input struct {
	Handler handlers.Handler // nil once the session is completed
	Phase   phases.Phase
	Stage   string
	Block   handlers.Artifacts // the phase's block before the turn (not modified)
	Outcome stream.Outcome
	Policy  stream.Policy
	GenUI   *genui.Validator // nil compiles the schema for this call
	// Skills and Locale are where the texts the server adds for the user come from (the
	// missing fields' question).
	Skills handlers.Skills
	Locale string
}

// Settlement is what the kept reply changes and reports, as values for the caller to
// persist and send.
type Settlement struct {
	// Block is the phase's block after the turn: the applied patch and the handler's own
	// additions; the block before it when the reply was not accepted.
	Block handlers.Artifacts
	// Report is the handler's verdict; Move says it asks for a phase move (an accepted
	// reply, a completed phase).
	Report handlers.Report
	Move   bool
	// Strategy is the strategy the accepted reply drafted or validated, nil for none.
	Strategy *handlers.StrategyRecord
	// Metadata is completed.metadata; the caller adds the phase change it makes.
	Metadata events.Metadata
}

// Settle settles the kept reply of a turn.
func Settle(in Input) Settlement {
	res := in.Outcome.Result
	x := extract(res.Blocks)
	calls := ToolCalls(res.ToolCalls) // the kept attempt's: what its reply reports on
	accepted := in.Outcome.Accepted()
	s := Settlement{Block: in.Block}
	m := &s.Metadata
	// Every attempt's calls are shown: a refused attempt's tools really ran.
	m.Phase, m.Stage, m.ToolCalls, m.Usage = string(in.Phase), in.Stage, ToolCalls(in.Outcome.Calls), res.Usage
	m.Attempts, m.Fallback, m.MissingFields = in.Outcome.Attempts, in.Outcome.Fallback, []string{}
	m.RefusedAttempts = events.RefusedAttempts(in.Outcome.Refused)
	if in.Policy != stream.PolicyOff {
		v := in.Outcome.Check.Validation
		m.Validation, m.ReplyLanguage = &v, in.Outcome.Check.Language
		for _, is := range in.Outcome.Check.Issues {
			m.Problems = append(m.Problems, describe(is))
		}
	}
	if accepted { // an invalid reply never applies a patch or records anything
		s.Block, m.StatePatch, m.RejectedPatch = applyPatch(in.Phase, in.Block, x.patch)
	}
	m.DroppedGenUI = x.dropped
	if in.Handler == nil {
		m.GenUI = []json.RawMessage{}
		return s
	}
	s.judge(in, calls, accepted)
	ui := FinishGenUI(x.genui, GenUIContext{
		Allowed: in.Handler.AllowedGenUI(), ToolCalls: calls, Ask: s.Report.Ask,
		Reply: res.Text, Schema: in.GenUI, Question: in.question, Cards: s.Report.GenUI,
	})
	m.GenUI, m.DroppedGenUI = ui.Items, append(m.DroppedGenUI, ui.Dropped...)
	return s
}

// question is the handler's missing-fields question in the turn's locale, the zero
// Missing when it has none (no skills given, or no text).
func (in Input) question(missing []string) handlers.Missing {
	if in.Skills == nil {
		return handlers.Missing{}
	}
	m, err := in.Handler.MissingQuestion(in.Skills, in.Locale, missing)
	if err != nil {
		return handlers.Missing{}
	}
	return m
}

// stopCriteria is what completed.metadata says of the phase's thresholds, nil when none
// are set. A text that cannot be read (an admin's version without a line) leaves the
// messages out and the checks still say what was judged: the turn is not failed for it.
func (in Input) stopCriteria(checks []handlers.Check) *handlers.StopCriteria {
	sc, err := handlers.Explain(in.Skills, in.Locale, checks)
	if err != nil {
		sc.Messages = []string{}
	}
	return sc
}

// judge asks the phase handler for its verdict on the block after the patch, and keeps what
// it records when the reply was accepted.
func (s *Settlement) judge(in Input, calls []store.ToolCall, accepted bool) {
	var patch map[string]any
	if len(s.Metadata.StatePatch) > 0 {
		_ = json.Unmarshal(s.Metadata.StatePatch, &patch) // applied, so an object
	}
	s.Report = in.Handler.PostProcess(handlers.PostInput{Artifacts: s.Block, ToolCalls: calls, Patch: patch})
	if s.Report.MissingFields != nil {
		s.Metadata.MissingFields = s.Report.MissingFields
	}
	s.Metadata.DeploymentSummary = s.Report.Summary
	s.Metadata.StopCriteria = in.stopCriteria(s.Report.Checks)
	if !accepted {
		return
	}
	if s.Report.Artifacts != nil {
		s.Block = s.Report.Artifacts
	}
	s.Strategy, s.Move = s.Report.Strategy, s.Report.Completed
}

// applyPatch merges patch into block and checks the phase's field rules: the merged block
// and the applied patch, or the block unchanged and the refused patch with why. A status
// field the patch would move backwards (handlers.StatusOrders) is refused on its own and
// the rest of the patch goes on.
func applyPatch(phase phases.Phase, block handlers.Artifacts, patch json.RawMessage) (handlers.Artifacts, json.RawMessage, *events.RejectedPatch) {
	if len(patch) == 0 {
		return block, nil, nil
	}
	patch, held := holdProtected(phase, block, patch)
	merged, err := MergePatch(block, patch)
	var reasons []string
	if err != nil {
		reasons = []string{err.Error()}
	}
	for _, fe := range phases.CheckArtifacts(phase, merged) {
		reasons = append(reasons, fe.String())
	}
	if len(reasons) > 0 {
		return block, nil, held.with(patch, reasons)
	}
	if held == nil {
		return merged, patch, nil
	}
	return merged, patch, &events.RejectedPatch{Patch: held.patch, Reasons: held.reasons}
}

// heldFields are the fields a patch may not set as it says, taken out of it.
type heldFields struct {
	patch   json.RawMessage // {field: value} of the held fields
	reasons []string
}

// with is the rejection of a whole patch (what was left of it, refused by the field
// rules) together with the fields held before.
func (h *heldFields) with(rest json.RawMessage, reasons []string) *events.RejectedPatch {
	if h == nil {
		return &events.RejectedPatch{Patch: rest, Reasons: reasons}
	}
	whole, err := MergePatch(map[string]any{}, h.patch)
	if err == nil {
		whole, err = MergePatch(whole, rest)
	}
	b, merr := json.Marshal(whole)
	if err != nil || merr != nil {
		b = rest
	}
	return &events.RejectedPatch{Patch: b, Reasons: append(h.reasons, reasons...)}
}

// holdProtected takes out of patch, with why, each field only the server writes (the
// figures of a run, which a reply cannot claim) and each status field it would move
// backwards; the patch is returned unchanged when it holds none (or when it is not an
// object: the field rules say so).
func holdProtected(phase phases.Phase, block handlers.Artifacts, patch json.RawMessage) (json.RawMessage, *heldFields) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(patch, &obj) != nil {
		return patch, nil
	}
	held, h := map[string]json.RawMessage{}, &heldFields{}
	for _, field := range phases.ServerFields(phase) {
		if raw, ok := obj[field]; ok {
			held[field], h.reasons = raw, append(h.reasons, field+": written by the server from the tools' results, not by a patch")
			delete(obj, field)
		}
	}
	for _, o := range handlers.StatusOrders(phase) {
		raw, ok := obj[o.Field]
		var to any
		if !ok || json.Unmarshal(raw, &to) != nil {
			continue
		}
		if why := o.Backwards(block[o.Field], to); why != "" {
			held[o.Field], h.reasons = raw, append(h.reasons, why)
			delete(obj, o.Field)
		}
	}
	if len(held) == 0 {
		return patch, nil
	}
	rest, err := json.Marshal(obj)
	hb, herr := json.Marshal(held)
	if err != nil || herr != nil { // maps of raw JSON always encode; keep the patch whole
		return patch, nil
	}
	h.patch = hb
	return rest, h
}
