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
type stressTestHandler struct{}

// Phase implements [Handler].
func (stressTestHandler) Phase() phases.Phase { return phases.StressTest }

// InitialArtifacts implements [Handler]: no decision yet.
func (stressTestHandler) InitialArtifacts() Artifacts {
	return Artifacts{"stress_test_decision": "pending"}
}

// Stage implements [Handler]: each stage waits for the id the one before produces.
func (stressTestHandler) Stage(a Artifacts) string {
	switch {
	case str(a, "scenario_set_id") == "":
		return StageBootstrap
	case str(a, "stress_report_id") == "":
		return StageScenario
	default:
		return StageFeedback
	}
}

func (stressTestHandler) stages() []string {
	return []string{StageBootstrap, StageScenario, StageFeedback}
}

// tools: every stage may run scenarios and read a report, because the user may ask for a
// rerun with other scenarios at any point.
func (stressTestHandler) tools(string) []string {
	return []string{"run_stress_scenarios", "get_stress_report"}
}

// Prompt implements [Handler].
func (h stressTestHandler) Prompt(s Skills, in PromptInput) (Pieces, error) {
	return buildPrompt(h, s, in)
}

// AllowedGenUI implements [Handler].
func (stressTestHandler) AllowedGenUI() []string {
	return []string{"stress_report", "scenario_table", "choice_prompt", "metric_table"}
}

// PostProcess implements [Handler]: the decision alone decides; the ids are evidence.
func (stressTestHandler) PostProcess(in PostInput) Report {
	a := in.Artifacts
	ev := evidence(a, in.ToolCalls, "stress_test_decision", "scenario_set_id", "stress_report_id")
	switch str(a, "stress_test_decision") {
	case "pass":
		return Report{Completed: true, NextPhase: phases.Deployment, Evidence: ev,
			Reason: "Stress test passed; moving to deployment."}
	case "revise":
		return Report{Completed: true, NextPhase: phases.Strategy, Evidence: ev,
			Reason: "Stress test asked for a revision; back to strategy."}
	}
	var missing []string
	if str(a, "scenario_set_id") == "" {
		missing = append(missing, "scenario_set_id")
	}
	if str(a, "stress_report_id") == "" {
		missing = append(missing, "stress_report_id")
	}
	missing = append(missing, "stress_test_decision")
	return Report{MissingFields: missing, Reason: stillNeeds("Stress test", missing), Evidence: ev}
}
