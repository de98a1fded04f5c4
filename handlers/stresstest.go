package handlers

import "github.com/phaseflow/phaseflow/phases"

// The stages of the stress test phase: agree on a scenario set, run it and read the report,
// then settle the decision with the user.
const (
	StageBootstrap = "bootstrap"
	StageScenario  = "scenario"
	StageFeedback  = "feedback"
)

// stressTestHandler runs the stress test phase. Its decision moves the session either on to
// deployment (pass) or back to strategy (revise); it never sends a session back on its own.
type stressTestHandler struct {
	criteria Criteria // judged on the latest stress run's scenario losses
}

// Phase implements [Handler].
func (stressTestHandler) Phase() phases.Phase { return phases.StressTest }

// InitialArtifacts implements [Handler]: no decision yet.
func (stressTestHandler) InitialArtifacts() Artifacts {
	return Artifacts{phases.KeyStressTestDecision: phases.DecisionPending}
}

// Stage implements [Handler]: each stage waits for the id the one before produces.
func (stressTestHandler) Stage(a Artifacts) string {
	switch {
	case str(a, phases.KeyScenarioSetID) == "":
		return StageBootstrap
	case str(a, phases.KeyStressReportID) == "":
		return StageScenario
	default:
		return StageFeedback
	}
}

func (stressTestHandler) stages() []string {
	return []string{StageBootstrap, StageScenario, StageFeedback}
}

// tools: agreeing on scenarios may run them when the user asks to start at once, but
// there is no report to read yet; running and the feedback may rerun scenarios and read
// the report, because the user may ask for a rerun with other scenarios at any point.
func (stressTestHandler) tools(stage string) []string {
	if stage == StageBootstrap {
		return []string{toolRunStress}
	}
	return []string{toolRunStress, toolGetStressReport}
}

// Enter implements [Handler]: a second stress test decides afresh, keeping the ids found.
func (h stressTestHandler) Enter(previous Artifacts) Artifacts { return enter(h, previous) }

// Prompt implements [Handler].
func (h stressTestHandler) Prompt(s Skills, in PromptInput) (Pieces, error) {
	return buildPrompt(h, s, in)
}

// MissingQuestion implements [Handler].
func (h stressTestHandler) MissingQuestion(s Skills, locale string, missing []string) (Missing, error) {
	return missingQuestion(h.Phase(), s, locale, missing)
}

// AllowedGenUI implements [Handler].
func (stressTestHandler) AllowedGenUI() []string {
	return []string{"stress_report", "scenario_table", "choice_prompt", "metric_table"}
}

// PostProcess implements [Handler]: the decision alone decides; the ids are evidence. A
// stress run's result fills the ids the model's patch left out and becomes a stress_report
// card.
func (h stressTestHandler) PostProcess(in PostInput) Report {
	fills, card := stressFills(in.ToolCalls)
	a := fill(h.Phase(), in.Artifacts, in.Patch, fills)
	r := h.verdict(in, a)
	r.Artifacts = a
	if card != nil {
		r.GenUI = append(r.GenUI, card)
	}
	return r
}

// verdict judges the block after the turn. A pass whose scenario losses miss the
// threshold holds the phase; a revision always goes back.
func (h stressTestHandler) verdict(in PostInput, a Artifacts) Report {
	ev := evidence(a, in.ToolCalls, phases.KeyStressTestDecision, phases.KeyScenarioSetID, phases.KeyStressReportID)
	checks := h.criteria.stressChecks(a)
	switch decision := str(a, phases.KeyStressTestDecision); {
	case decision == phases.DecisionPass && Missed(checks):
		missing := []string{phases.KeyStressMetrics}
		return Report{MissingFields: missing, Ask: missing, Reason: stillNeeds("Stress test", missing), Evidence: ev, Checks: checks}
	case decision == phases.DecisionPass:
		return Report{Completed: true, NextPhase: phases.Deployment, Evidence: ev, Checks: checks,
			Reason: "Stress test passed; moving to deployment.", ReasonSkill: skillName(phases.StressTest, "moves", "pass")}
	case decision == phases.DecisionRevise:
		return Report{Completed: true, NextPhase: phases.Strategy, Evidence: ev, Checks: checks,
			Reason: "Stress test asked for a revision; back to strategy.", ReasonSkill: skillName(phases.StressTest, "moves", "revise")}
	}
	var missing []string
	if str(a, phases.KeyScenarioSetID) == "" {
		missing = append(missing, phases.KeyScenarioSetID)
	}
	if str(a, phases.KeyStressReportID) == "" {
		missing = append(missing, phases.KeyStressReportID)
	}
	missing = append(missing, phases.KeyStressTestDecision)
	if Missed(checks) {
		missing = append(missing, phases.KeyStressMetrics)
	}
	return Report{MissingFields: missing, Ask: missing, Reason: stillNeeds("Stress test", missing), Evidence: ev, Checks: checks}
}
