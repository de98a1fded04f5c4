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
	return Artifacts{
		phases.KeyDeploymentStatus: phases.DeploymentReady, phases.KeyRiskGuardStatus: phases.GuardPending,
		phases.KeyRolloutStatus: phases.RolloutPending,
	}
}

// Stage implements [Handler]. Nothing rolls out before there is a target and an armed risk
// guard; once the rollout is done and the deployment is no longer just ready, it is watched.
func (deploymentHandler) Stage(a Artifacts) string {
	switch {
	case str(a, phases.KeyDeploymentTarget) == "" || str(a, phases.KeyRiskGuardStatus) != phases.GuardArmed:
		return StagePrepare
	case str(a, phases.KeyDeploymentStatus) == phases.DeploymentReady || str(a, phases.KeyRolloutStatus) != phases.RolloutDone:
		return StageRollout
	default:
		return StageMonitor
	}
}

func (deploymentHandler) stages() []string { return []string{StagePrepare, StageRollout, StageMonitor} }

// tools follow the stage texts: preparing arms the risk guard and deploys nothing; the
// rollout deploys once the guard is armed and follows the rollout; monitoring reads the
// deployment and the guard and never deploys again.
func (deploymentHandler) tools(stage string) []string {
	switch stage {
	case StagePrepare:
		return []string{toolCheckRiskGuard}
	case StageRollout:
		return []string{toolDeploy, toolDeploymentStatus}
	}
	return []string{toolDeploymentStatus, toolCheckRiskGuard}
}

// Enter implements [Handler]: a deployment starts over from ready, keeping the ids found.
func (h deploymentHandler) Enter(previous Artifacts) Artifacts { return enter(h, previous) }

// Prompt implements [Handler].
func (h deploymentHandler) Prompt(s Skills, in PromptInput) (Pieces, error) {
	return buildPrompt(h, s, in)
}

// MissingQuestion implements [Handler].
func (h deploymentHandler) MissingQuestion(s Skills, locale string, missing []string) (Missing, error) {
	return missingQuestion(h.Phase(), s, locale, missing)
}

// AllowedGenUI implements [Handler].
func (deploymentHandler) AllowedGenUI() []string {
	return []string{"deployment_summary", "rollout_status", "choice_prompt", "metric_table"}
}

// PostProcess implements [Handler]. A block needs its blocker_code: the code is what the
// strategy phase is sent back to fix, so a block without one is reported as missing rather
// than moved. The deployer's results fill what the model's patch left out (target, guard,
// id, status) and become a deployment_summary card. Every deployment turn reports the
// deployment's state as its summary.
func (h deploymentHandler) PostProcess(in PostInput) Report {
	fills, card := deploymentFills(in.ToolCalls, in.Artifacts)
	a := fill(h.Phase(), in.Artifacts, in.Patch, fills)
	r := h.verdict(in, a)
	r.Artifacts, r.Summary = a, clone(a)
	if card != nil {
		r.GenUI = append(r.GenUI, card)
	}
	return r
}

func (deploymentHandler) verdict(in PostInput, a Artifacts) Report {
	ev := evidence(a, in.ToolCalls, phases.KeyDeploymentStatus, phases.KeyDeploymentID, phases.KeyDeploymentTarget,
		phases.KeyRiskGuardStatus, phases.KeyRolloutStatus, phases.KeyBlockerCode)
	switch str(a, phases.KeyDeploymentStatus) {
	case phases.DeploymentCompleted:
		return Report{Completed: true, NextPhase: phases.Completed, Evidence: ev,
			Reason: "Deployment completed; the session is done.", ReasonSkill: skillName(phases.Deployment, "moves", "completed")}
	case phases.DeploymentBlocked:
		code := str(a, phases.KeyBlockerCode)
		if code == "" {
			return Report{MissingFields: []string{phases.KeyBlockerCode}, Ask: []string{phases.KeyBlockerCode}, Evidence: ev,
				Reason: "Deployment blocked without a blocker_code."}
		}
		return Report{Completed: true, NextPhase: phases.Strategy, Evidence: ev,
			Reason: "Deployment blocked (" + code + "); back to strategy.", ReasonSkill: skillName(phases.Deployment, "moves", "blocked")}
	}
	missing := deploymentMissing(a)
	r := Report{MissingFields: missing, Reason: stillNeeds("Deployment", missing), Evidence: ev}
	if n := len(missing) - 1; n > 0 {
		r.Ask = missing[:n:n]
	}
	return r
}

// deploymentMissing lists, in the order the stages produce them, what a deployment still
// lacks before it can complete. The last is always the deployment's final state, which
// watching the running deployment reports: the user is not asked for it (Report.Ask), so
// a finished rollout asks nothing more.
func deploymentMissing(a Artifacts) []string {
	var missing []string
	if str(a, phases.KeyDeploymentTarget) == "" {
		missing = append(missing, phases.KeyDeploymentTarget)
	}
	if str(a, phases.KeyRiskGuardStatus) != phases.GuardArmed {
		missing = append(missing, phases.KeyRiskGuardStatus)
	}
	if str(a, phases.KeyDeploymentID) == "" {
		missing = append(missing, phases.KeyDeploymentID)
	}
	if str(a, phases.KeyRolloutStatus) != phases.RolloutDone {
		missing = append(missing, phases.KeyRolloutStatus)
	}
	return append(missing, phases.KeyDeploymentStatus)
}
