package handlers

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// The stages of the strategy phase: the model drafts and validates a strategy, backtests it,
// then asks the user to confirm it.
const (
	StageDraft    = "draft"
	StageBacktest = "backtest"
	StageConfirm  = "confirm"
)

// toolValidateStrategy is the tool whose result names the strategy's id.
// The strategy engine's tools.
const (
	toolValidateStrategy = "validate_strategy"
	toolRunBacktest      = "run_backtest"
)

// strategyHandler runs the strategy phase. It completes when the strategy is confirmed, its
// backtest completed and the user asked to move on (in chat or through the confirm route).
type strategyHandler struct {
	criteria Criteria // judged on the latest backtest's figures
}

// Phase implements [Handler].
func (strategyHandler) Phase() phases.Phase { return phases.Strategy }

// InitialArtifacts implements [Handler]: a draft with no backtest and no request to move.
func (strategyHandler) InitialArtifacts() Artifacts {
	return Artifacts{
		phases.KeyStrategyStatus: phases.StrategyDraft, phases.KeyBacktestStatus: phases.BacktestNone,
		phases.KeyAdvanceToStressTest: false,
	}
}

// Stage implements [Handler]. Without a strategy_id there is nothing to backtest yet, so the
// phase drafts; with one it backtests until the backtest completed, then confirms.
func (strategyHandler) Stage(a Artifacts) string {
	switch {
	case str(a, phases.KeyStrategyID) == "":
		return StageDraft
	case str(a, phases.KeyBacktestStatus) != phases.BacktestCompleted:
		return StageBacktest
	default:
		return StageConfirm
	}
}

func (strategyHandler) stages() []string { return []string{StageDraft, StageBacktest, StageConfirm} }

// tools: drafting validates; backtesting may revalidate after a change; confirming is a
// conversation with the user and needs no tool.
func (strategyHandler) tools(stage string) []string {
	switch stage {
	case StageDraft:
		return []string{toolValidateStrategy}
	case StageBacktest:
		return []string{toolRunBacktest, toolValidateStrategy}
	}
	return nil
}

// Prompt implements [Handler].
func (h strategyHandler) Prompt(s Skills, in PromptInput) (Pieces, error) {
	return buildPrompt(h, s, in)
}

// MissingQuestion implements [Handler].
func (h strategyHandler) MissingQuestion(s Skills, locale string, missing []string) (Missing, error) {
	return missingQuestion(h.Phase(), s, locale, missing)
}

// AllowedGenUI implements [Handler].
func (strategyHandler) AllowedGenUI() []string {
	return []string{"strategy_ref", "strategy_card", "backtest_charts", "choice_prompt", "metric_table"}
}

// Enter implements [Handler]: a strategy sent back for revision keeps its id and draft but
// must be backtested and confirmed again.
func (h strategyHandler) Enter(previous Artifacts) Artifacts { return enter(h, previous) }

// PostProcess implements [Handler]: all three conditions must hold, so a confirmed strategy
// whose backtest failed, or one the user has not asked to advance, stays here. It also
// records the strategy the turn drafted (a strategy_draft in the block) or validated (a
// validate_strategy call that returned a strategy_id), and builds the strategy_card of a
// draft the patch set.
func (h strategyHandler) PostProcess(in PostInput) Report {
	a := clone(in.Artifacts)
	if m, ran := backtestMetrics(in.ToolCalls); ran {
		a[phases.KeyBacktestMetrics] = m
	}
	rec := strategyRecord(a, in.ToolCalls)
	if rec != nil {
		a[phases.KeyStrategyID] = rec.ID
	}
	r := h.verdict(a, in.ToolCalls)
	r.Artifacts, r.Strategy = a, rec
	if card := strategyCard(a, in.Patch); card != nil {
		r.GenUI = append(r.GenUI, card)
	}
	return r
}

// verdict judges a block: completed, or what it still misses. A backtest whose figures
// miss a threshold holds the phase like a missing field; one that reported no figure for
// a threshold does not (the check says so, as a warning).
func (h strategyHandler) verdict(a Artifacts, calls []store.ToolCall) Report {
	var missing []string
	if str(a, phases.KeyStrategyID) == "" {
		missing = append(missing, phases.KeyStrategyID)
	}
	if str(a, phases.KeyBacktestStatus) != phases.BacktestCompleted {
		missing = append(missing, phases.KeyBacktestStatus)
	}
	if str(a, phases.KeyStrategyStatus) != phases.StrategyConfirmed {
		missing = append(missing, phases.KeyStrategyStatus)
	}
	if !boolean(a, phases.KeyAdvanceToStressTest) {
		missing = append(missing, phases.KeyAdvanceToStressTest)
	}
	checks := h.criteria.backtestChecks(a)
	if Missed(checks) {
		missing = append(missing, phases.KeyBacktestMetrics)
	}
	ev := evidence(a, calls, phases.KeyStrategyID, phases.KeyStrategyStatus, phases.KeyBacktestStatus, phases.KeyAdvanceToStressTest)
	if len(missing) > 0 {
		return Report{MissingFields: missing, Ask: missing, Reason: stillNeeds("Strategy", missing), Evidence: ev, Checks: checks}
	}
	return Report{
		Completed:   true,
		NextPhase:   phases.StressTest,
		Reason:      "Strategy confirmed with a completed backtest, and the move to stress test was requested.",
		ReasonSkill: skillName(phases.Strategy, "moves", "done"),
		Evidence:    ev,
		Checks:      checks,
	}
}

// strategyRecord is the strategy a turn touched: the id validate_strategy returned (else the
// block's), with the draft's name and spec and the block's statuses; nil when the turn has
// neither an id nor a draft.
func strategyRecord(a Artifacts, calls []store.ToolCall) *StrategyRecord {
	id := StrategyFromTools(calls)
	if id == "" {
		id = str(a, phases.KeyStrategyID)
	}
	draft, hasDraft := a[phases.KeyStrategyDraft].(map[string]any)
	if id == "" && !hasDraft {
		return nil
	}
	if id == "" {
		id = store.NewID()
	}
	rec := &StrategyRecord{ID: id, Status: str(a, phases.KeyStrategyStatus), BacktestStatus: str(a, phases.KeyBacktestStatus)}
	if hasDraft {
		rec.Name, _ = draft[phases.KeyStrategyDraftName].(string)
		rec.Spec = draft[phases.KeyStrategyDraftSpec]
	}
	return rec
}

// StrategyFromTools returns the strategy id the last successful validate_strategy call of a
// turn returned, "" when none did.
func StrategyFromTools(calls []store.ToolCall) string {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if c.Name != toolValidateStrategy || c.Status != store.ToolSuccess {
			continue
		}
		var out struct {
			StrategyID string `json:"strategy_id"`
		}
		if json.Unmarshal([]byte(c.Output), &out) == nil && out.StrategyID != "" {
			return out.StrategyID
		}
	}
	return ""
}

// Confirm implements the confirm route's rule (POST /api/v1/strategies/{id}/confirm) on
// the strategy phase's block: the strategy becomes the block's, confirmed, with the move to
// stress test requested or not. The report says whether the phase is now complete.
func (h strategyHandler) Confirm(block Artifacts, strategyID string, advance bool) Report {
	a := clone(block)
	for k, v := range h.InitialArtifacts() {
		if _, ok := a[k]; !ok {
			a[k] = v
		}
	}
	a[phases.KeyStrategyID], a[phases.KeyStrategyStatus], a[phases.KeyAdvanceToStressTest] = strategyID, phases.StrategyConfirmed, advance
	r := h.verdict(a, nil)
	r.Artifacts = a
	if r.Completed {
		r.Reason += " (confirmed through the confirm route)"
	}
	return r
}

// stillNeeds is the audit reason of a turn that did not complete its phase.
func stillNeeds(phase string, missing []string) string {
	return fmt.Sprintf("%s phase still needs %s.", phase, strings.Join(missing, ", "))
}
