package phases

// Artifact keys that code reads or writes (the prompts and the model use the same names;
// [Fields] describes each). Naming them once keeps a typo from becoming a silent "unset".
const (
	KeyStrategyID          = "strategy_id"
	KeyStrategyStatus      = "strategy_status"
	KeyBacktestStatus      = "backtest_status"
	KeyAdvanceToStressTest = "advance_to_stress_test"
	KeyStrategyDraft       = "strategy_draft"
	KeyScenarioSetID       = "scenario_set_id"
	KeyStressReportID      = "stress_report_id"
	KeyStressTestDecision  = "stress_test_decision"
	KeyDeploymentTarget    = "deployment_target"
	KeyRiskGuardStatus     = "risk_guard_status"
	KeyRolloutStatus       = "rollout_status"
	KeyDeploymentID        = "deployment_id"
	KeyDeploymentStatus    = "deployment_status"
	KeyBlockerCode         = "blocker_code"
	KeyStrategyDraftName   = "name"
	KeyStrategyDraftSpec   = "spec"
	KeyBacktestMetrics     = "backtest_metrics"
	KeyStressMetrics       = "stress_metrics"
	keyIDSuffix            = "_id"
)

// Artifact values the handlers decide on; the strategy and backtest statuses are also the
// values of the strategies table (store writes the first of each for a new strategy).
const (
	StrategyDraft     = "draft"
	StrategyValidated = "validated"
	StrategyConfirmed = "confirmed"

	BacktestNone      = "none"
	BacktestRunning   = "running"
	BacktestCompleted = "completed"
	BacktestFailed    = "failed"

	DecisionPending = "pending"
	DecisionPass    = "pass"
	DecisionRevise  = "revise"

	GuardPending = "pending"
	GuardArmed   = "armed"

	RolloutPending = "pending"
	RolloutDone    = "done"

	DeploymentReady     = "ready"
	DeploymentCompleted = "completed"
	DeploymentBlocked   = "blocked"
)

// StrategyIDOf returns the strategy id a session's artifacts (blocks keyed by phase) hold,
// "" when none: the strategy phase's block is where a strategy's id lives.
func StrategyIDOf(artifacts map[string]map[string]any) string {
	id, _ := artifacts[string(Strategy)][KeyStrategyID].(string)
	return id
}

// IsIDKey reports whether key names an id a phase found (scenario_set_id, deployment_id,
// …): ids survive a phase's block being reset on re-entry.
func IsIDKey(key string) bool {
	return len(key) > len(keyIDSuffix) && key[len(key)-len(keyIDSuffix):] == keyIDSuffix
}

// IsFinal reports whether p ends the session: nothing happens in it.
func IsFinal(p Phase) bool { return p == Completed }
