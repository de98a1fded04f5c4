package handlers

import (
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/phases"
)

// The stages of the strategy phase: the model drafts and validates a strategy, backtests it,
// then asks the user to confirm it.
const (
	StageDraft    = "draft"
	StageBacktest = "backtest"
	StageConfirm  = "confirm"
)

// strategyHandler runs the strategy phase. It completes when the strategy is confirmed, its
// backtest completed and the user asked to move on (in chat or through the confirm route).
type strategyHandler struct{}

// Phase implements [Handler].
func (strategyHandler) Phase() phases.Phase { return phases.Strategy }

// InitialArtifacts implements [Handler]: a draft with no backtest and no request to move.
func (strategyHandler) InitialArtifacts() Artifacts {
	return Artifacts{"strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false}
}

// Stage implements [Handler]. Without a strategy_id there is nothing to backtest yet, so the
// phase drafts; with one it backtests until the backtest completed, then confirms.
func (strategyHandler) Stage(a Artifacts) string {
	switch {
	case str(a, "strategy_id") == "":
		return StageDraft
	case str(a, "backtest_status") != "completed":
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
		return []string{"validate_strategy"}
	case StageBacktest:
		return []string{"run_backtest", "validate_strategy"}
	}
	return nil
}

// Prompt implements [Handler].
func (h strategyHandler) Prompt(s Skills, in PromptInput) (Pieces, error) {
	return buildPrompt(h, s, in)
}

// AllowedGenUI implements [Handler].
func (strategyHandler) AllowedGenUI() []string {
	return []string{"strategy_ref", "strategy_card", "backtest_charts", "choice_prompt", "metric_table"}
}

// PostProcess implements [Handler]: all three conditions must hold, so a confirmed strategy
// whose backtest failed, or one the user has not asked to advance, stays here.
func (strategyHandler) PostProcess(in PostInput) Report {
	a := in.Artifacts
	var missing []string
	if str(a, "strategy_id") == "" {
		missing = append(missing, "strategy_id")
	}
	if str(a, "backtest_status") != "completed" {
		missing = append(missing, "backtest_status")
	}
	if str(a, "strategy_status") != "confirmed" {
		missing = append(missing, "strategy_status")
	}
	if !boolean(a, "advance_to_stress_test") {
		missing = append(missing, "advance_to_stress_test")
	}
	ev := evidence(a, in.ToolCalls, "strategy_id", "strategy_status", "backtest_status", "advance_to_stress_test")
	if len(missing) > 0 {
		return Report{MissingFields: missing, Reason: stillNeeds("Strategy", missing), Evidence: ev}
	}
	return Report{
		Completed: true,
		NextPhase: phases.StressTest,
		Reason:    "Strategy confirmed with a completed backtest, and the move to stress test was requested.",
		Evidence:  ev,
	}
}

// stillNeeds is the audit reason of a turn that did not complete its phase.
func stillNeeds(phase string, missing []string) string {
	return fmt.Sprintf("%s phase still needs %s.", phase, strings.Join(missing, ", "))
}
