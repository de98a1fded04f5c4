package handlers

import "github.com/phaseflow/phaseflow/phases"

// The stages of the deployment phase: choose a target and arm the risk guard, roll out, then
// watch the running deployment until it is done.
const (
	StagePrepare = "prepare"
	StageRollout = "rollout"
	StageMonitor = "monitor"
)

// deploymentHandler runs the deployment phase. It ends the session when the deployment
// completed, and sends it back to strategy when the deployment is blocked.
type deploymentHandler struct{}

// Phase implements [Handler].
func (deploymentHandler) Phase() phases.Phase { return phases.Deployment }

// InitialArtifacts implements [Handler]: ready to deploy, nothing armed or rolled out.
func (deploymentHandler) InitialArtifacts() Artifacts {
	return Artifacts{"deployment_status": "ready", "risk_guard_status": "pending", "rollout_status": "pending"}
}

// Stage implements [Handler]. Nothing rolls out before there is a target and an armed risk
// guard; once the rollout is done and the deployment is no longer just ready, it is watched.
func (deploymentHandler) Stage(a Artifacts) string {
	switch {
	case str(a, "deployment_target") == "" || str(a, "risk_guard_status") != "armed":
		return StagePrepare
	case str(a, "deployment_status") == "ready" || str(a, "rollout_status") != "done":
		return StageRollout
	default:
		return StageMonitor
	}
}

func (deploymentHandler) stages() []string { return []string{StagePrepare, StageRollout, StageMonitor} }

// tools: the same three in every stage; the stage texts say which one fits when, and the
// deploy tool itself refuses without an armed guard.
func (deploymentHandler) tools(string) []string {
	return []string{"check_risk_guard", "deploy_strategy", "get_deployment_status"}
}

// Prompt implements [Handler].
func (h deploymentHandler) Prompt(s Skills, in PromptInput) (Pieces, error) {
	return buildPrompt(h, s, in)
}

// AllowedGenUI implements [Handler].
func (deploymentHandler) AllowedGenUI() []string {
	return []string{"deployment_summary", "rollout_status", "choice_prompt", "metric_table"}
}

// PostProcess implements [Handler]. A block needs its blocker_code: the code is what the
// strategy phase is sent back to fix, so a block without one is reported as missing rather
// than moved.
func (deploymentHandler) PostProcess(in PostInput) Report {
	a := in.Artifacts
	ev := evidence(a, in.ToolCalls, "deployment_status", "deployment_id", "deployment_target",
		"risk_guard_status", "rollout_status", "blocker_code")
	switch str(a, "deployment_status") {
	case "completed":
		return Report{Completed: true, NextPhase: phases.Completed, Evidence: ev,
			Reason: "Deployment completed; the session is done."}
	case "blocked":
		code := str(a, "blocker_code")
		if code == "" {
			return Report{MissingFields: []string{"blocker_code"}, Evidence: ev,
				Reason: "Deployment blocked without a blocker_code."}
		}
		return Report{Completed: true, NextPhase: phases.Strategy, Evidence: ev,
			Reason: "Deployment blocked (" + code + "); back to strategy."}
	}
	missing := deploymentMissing(a)
	return Report{MissingFields: missing, Reason: stillNeeds("Deployment", missing), Evidence: ev}
}

// deploymentMissing lists, in the order the stages produce them, what a deployment still
// lacks before it can complete.
func deploymentMissing(a Artifacts) []string {
	var missing []string
	if str(a, "deployment_target") == "" {
		missing = append(missing, "deployment_target")
	}
	if str(a, "risk_guard_status") != "armed" {
		missing = append(missing, "risk_guard_status")
	}
	if str(a, "deployment_id") == "" {
		missing = append(missing, "deployment_id")
	}
	if str(a, "rollout_status") != "done" {
		missing = append(missing, "rollout_status")
	}
	return append(missing, "deployment_status")
}
