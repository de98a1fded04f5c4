package handlers

import (
	"fmt"
	"slices"

	"github.com/phaseflow/phaseflow/phases"
)

// StatusOrder is how one status field of a phase's block may move by a model's patch:
// forward through Steps (values of one step are alternatives, as a guard armed or
// failed), or back to Revise, the state the model writes when the user asks for changes
// ("" when the field has none). A decision made by the user or a tool (a strategy
// confirmed through its route, a guard armed) therefore stays made when a later turn's
// patch repeats an older status.
type StatusOrder struct {
	Field  string
	Steps  [][]string
	Revise string
}

// StatusOrders are the forward-only status fields of phase's block.
//
//   - strategy: strategy_status draft → validated → confirmed, revised back to draft.
//     backtest_status is not on it: running another backtest moves it back to running.
//   - stress_test: stress_test_decision pending → pass | revise.
//   - deployment: risk_guard_status pending → armed | failed (checked again from either);
//     rollout_status pending → rolling → done; deployment_status ready → deployed →
//     completed | blocked, back to ready when a blocked deployment is prepared again.
func StatusOrders(phase phases.Phase) []StatusOrder {
	switch phase {
	case phases.Strategy:
		return []StatusOrder{{Field: phases.KeyStrategyStatus, Revise: phases.StrategyDraft,
			Steps: [][]string{{phases.StrategyDraft}, {phases.StrategyValidated}, {phases.StrategyConfirmed}}}}
	case phases.StressTest:
		return []StatusOrder{{Field: phases.KeyStressTestDecision,
			Steps: [][]string{{phases.DecisionPending}, {phases.DecisionPass, phases.DecisionRevise}}}}
	case phases.Deployment:
		return []StatusOrder{
			{Field: phases.KeyRiskGuardStatus, Steps: [][]string{{phases.GuardPending}, {phases.GuardArmed, "failed"}}},
			{Field: phases.KeyRolloutStatus, Steps: [][]string{{phases.RolloutPending}, {"rolling"}, {phases.RolloutDone}}},
			{Field: phases.KeyDeploymentStatus, Revise: phases.DeploymentReady,
				Steps: [][]string{{phases.DeploymentReady}, {"deployed"}, {phases.DeploymentCompleted, phases.DeploymentBlocked}}},
		}
	}
	return nil
}

// step is the index of value in o's steps, -1 when it is not on them.
func (o StatusOrder) step(value string) int {
	return slices.IndexFunc(o.Steps, func(s []string) bool { return slices.Contains(s, value) })
}

// Backwards says why moving the field from `from` to `to` is refused, "" when it is
// allowed: forward or sideways, back to the revise state, or from or to a value off the
// order (the phase's field rules judge those).
func (o StatusOrder) Backwards(from, to any) string {
	f, _ := from.(string)
	t, _ := to.(string)
	if f == "" || t == "" || t == o.Revise {
		return ""
	}
	fi, ti := o.step(f), o.step(t)
	if fi < 0 || ti < 0 || ti >= fi {
		return ""
	}
	return fmt.Sprintf("%s: %q cannot go back to %q", o.Field, f, t)
}
