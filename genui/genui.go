// Package genui is the typed contract of the GenUI cards the server sends in
// completed.metadata.genui: the card type names, the JSON Schema (2020-12) every card must
// match, and the check that holds a card against it.
//
// The schema is the one source of the contract. It is embedded here, served at
// GET /api/v1/genui/schema.json, copied into the OpenAPI document's components (a test in
// package api keeps the copy in step), and the server checks every card before it sends it,
// so a front end can render the fields it reads without guarding against each one.
package genui

import (
	_ "embed"
	"slices"
)

// The card types. A phase allows a subset of them (handlers.Handler.AllowedGenUI).
const (
	StrategyCard      = "strategy_card"      // a drafted strategy: name, status, spec, rules
	StrategyRef       = "strategy_ref"       // a stored strategy by id
	BacktestCharts    = "backtest_charts"    // backtest series to draw, with metrics
	ChoicePrompt      = "choice_prompt"      // a question with buttons, or the missing fields
	MetricTable       = "metric_table"       // a table of figures
	ScenarioTable     = "scenario_table"     // the scenarios of a stress scenario set
	StressReport      = "stress_report"      // the result of a stress test run
	DeploymentSummary = "deployment_summary" // target, risk guard, deployment status
	RolloutStatus     = "rollout_status"     // the steps of a rollout
)

// Types returns every card type the schema knows, in the order the phases use them. The
// slice is new on every call.
func Types() []string {
	return []string{StrategyCard, StrategyRef, BacktestCharts, ChoicePrompt, MetricTable,
		ScenarioTable, StressReport, DeploymentSummary, RolloutStatus}
}

// IsType reports whether typ is one of [Types].
func IsType(typ string) bool { return slices.Contains(Types(), typ) }

// schemaJSON is the schema document, as served and as compiled.
//
//go:embed schema.json
var schemaJSON []byte

// SchemaID is the schema's $id, the base its $defs references resolve against.
const SchemaID = "urn:phaseflow:genui:v1"

// Schema returns the JSON Schema document of a card (a copy; callers may keep or change it).
func Schema() []byte { return slices.Clone(schemaJSON) }
