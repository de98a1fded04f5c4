package handlers

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// What the tools of the later phases return (the MCP servers' results, as the scripted
// upstream plays them): the fields a block and a card are filled from.
type (
	stressResult struct {
		StressReportID string  `json:"stress_report_id"`
		ScenarioSetID  string  `json:"scenario_set_id"`
		WorstDrawdown  float64 `json:"worst_drawdown"`
		Results        []struct {
			Scenario    string   `json:"scenario"`
			PnL         *float64 `json:"pnl"` // nil: not reported
			MaxDrawdown float64  `json:"max_drawdown"`
		} `json:"results"`
	}
	deploymentResult struct {
		Status       string             `json:"status"`
		Target       string             `json:"target"`
		DeploymentID string             `json:"deployment_id"`
		Limits       map[string]float64 `json:"limits"`
		Trades       *int               `json:"trades"`
		PnL          *float64           `json:"pnl"`
		Breaches     []json.RawMessage  `json:"breaches"`
	}
)

// Tools whose results the later phases read.
const (
	toolRunStress        = "run_stress_scenarios"
	toolGetStressReport  = "get_stress_report"
	toolCheckRiskGuard   = "check_risk_guard"
	toolDeploy           = "deploy_strategy"
	toolDeploymentStatus = "get_deployment_status"
)

// result is one successful tool call's output, decoded, with the tool's name.
type result[T any] struct {
	tool string
	out  T
}

// successes returns the outputs of the turn's successful calls of the named tools, decoded
// into T, in order; an output that does not decode is skipped.
func successes[T any](calls []store.ToolCall, names ...string) []result[T] {
	var out []result[T]
	for _, c := range calls {
		if c.Status != store.ToolSuccess || !slices.Contains(names, c.Name) {
			continue
		}
		var v T
		if json.Unmarshal([]byte(c.Output), &v) == nil {
			out = append(out, result[T]{tool: c.Name, out: v})
		}
	}
	return out
}

// fill sets, in a copy of a, every field of fills the model's patch left out, when the
// result still keeps the phase's field rules (a value the rules refuse fills nothing).
func fill(p phases.Phase, a Artifacts, patch map[string]any, fills Artifacts) Artifacts {
	out := clone(a)
	for k, v := range fills {
		if _, set := patch[k]; set || v == nil || v == "" {
			continue
		}
		trial := clone(out)
		trial[k] = v
		if phases.CheckArtifacts(p, trial) == nil {
			out = trial
		}
	}
	return out
}

// stressFills and stressCard read the last stress run of the turn: its ids for the block,
// and a stress_report card (the worst scenario, then a row per scenario).
func stressFills(calls []store.ToolCall) (Artifacts, json.RawMessage) {
	runs := successes[stressResult](calls, toolRunStress, toolGetStressReport)
	if len(runs) == 0 {
		return nil, nil
	}
	r := runs[len(runs)-1].out
	fills := Artifacts{phases.KeyScenarioSetID: r.ScenarioSetID, phases.KeyStressReportID: r.StressReportID,
		phases.KeyStressMetrics: stressMetrics(r)}
	if r.StressReportID == "" {
		return fills, nil
	}
	card := map[string]any{"type": "stress_report", "stress_report_id": r.StressReportID, "source": "auto"}
	if r.ScenarioSetID != "" {
		card["scenario_set_id"] = r.ScenarioSetID
	}
	worst, rows := -1.0, [][]any{}
	for _, x := range r.Results {
		pnl := "–"
		if x.PnL != nil {
			pnl = percent(*x.PnL)
		}
		rows = append(rows, []any{x.Scenario, pnl, percent(x.MaxDrawdown)})
		if x.MaxDrawdown > worst && x.Scenario != "" {
			worst, card["worst_scenario"] = x.MaxDrawdown, x.Scenario
		}
	}
	if dd := math.Max(r.WorstDrawdown, worst); dd >= 0 && dd <= 1 {
		card["worst_drawdown"] = dd
	}
	if len(rows) > 0 {
		card["rows"] = rows
	}
	return fills, mustJSON(card)
}

// deploymentFills reads the turn's deployer results in order (a later one wins): the
// target, the guard's state, the deployment's id and status for the block, and a
// deployment_summary card of where the deployment stands. block gives what the results
// leave out (a monitor call names no target).
func deploymentFills(calls []store.ToolCall, block Artifacts) (Artifacts, json.RawMessage) {
	results := successes[deploymentResult](calls, toolCheckRiskGuard, toolDeploy, toolDeploymentStatus)
	if len(results) == 0 {
		return nil, nil
	}
	fills := Artifacts{}
	card := map[string]any{"type": "deployment_summary", "source": "auto"}
	for _, res := range results {
		tool, r := res.tool, res.out
		setIf(fills, phases.KeyDeploymentTarget, r.Target)
		setIf(fills, phases.KeyDeploymentID, r.DeploymentID)
		switch {
		case tool == toolCheckRiskGuard && (r.Status == phases.GuardArmed || r.Status == "failed"):
			fills[phases.KeyRiskGuardStatus] = r.Status
		case tool != toolCheckRiskGuard && r.Status != "":
			fills[phases.KeyDeploymentStatus] = r.Status
		}
		if len(r.Limits) > 0 {
			card["limits"] = r.Limits
		}
		if r.Trades != nil {
			card["trades"] = *r.Trades
		}
		if r.PnL != nil {
			card["pnl"] = *r.PnL
		}
		if r.Breaches != nil {
			card["breaches"] = len(r.Breaches)
		}
	}
	for field, key := range map[string]string{phases.KeyDeploymentTarget: "target", phases.KeyDeploymentID: "deployment_id",
		phases.KeyRiskGuardStatus: "risk_guard_status", phases.KeyDeploymentStatus: "deployment_status"} {
		if v := firstString(fills[field], block[field]); v != "" {
			card[key] = v
		}
	}
	if card["target"] == nil || card["deployment_status"] == phases.DeploymentBlocked {
		return fills, nil // a summary needs its target; a block needs the model's blocker_code
	}
	return fills, mustJSON(card)
}

// strategyCard is the strategy_card of a draft the turn's patch set (docs/turn.md):
// its name and spec, and the block's id and status.
func strategyCard(a Artifacts, patch map[string]any) json.RawMessage {
	if _, drafted := patch[phases.KeyStrategyDraft]; !drafted {
		return nil
	}
	draft, _ := a[phases.KeyStrategyDraft].(map[string]any)
	name, _ := draft[phases.KeyStrategyDraftName].(string)
	spec, ok := draft[phases.KeyStrategyDraftSpec].(map[string]any)
	if name == "" || !ok {
		return nil
	}
	card := map[string]any{"type": "strategy_card", "name": name, "spec": spec, "source": "auto"}
	setIf(card, "strategy_id", str(a, phases.KeyStrategyID))
	if s := str(a, phases.KeyStrategyStatus); slices.Contains([]string{phases.StrategyDraft, phases.StrategyValidated, phases.StrategyConfirmed}, s) {
		card["status"] = s
	}
	return mustJSON(card)
}

func setIf(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

func firstString(vs ...any) string {
	for _, v := range vs {
		if s, _ := v.(string); s != "" {
			return s
		}
	}
	return ""
}

// percent writes a fraction as a table cell: -0.14 is "-14%".
func percent(f float64) string { return fmt.Sprintf("%.0f%%", f*100) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
