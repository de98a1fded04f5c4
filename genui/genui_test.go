package genui_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/genui"
)

// validCards holds one card of every type (two for choice_prompt, which has two forms), as
// the phases send them.
func validCards() map[string]string {
	return map[string]string{
		"strategy_card": `{"type":"strategy_card","name":"BTC momentum","status":"draft",` +
			`"spec":{"symbol":"BTC-USD","timeframe":"4h"},"rules":["Entry: 20-bar rate of change above +3%"]}`,
		"strategy_ref":    `{"type":"strategy_ref","strategy_id":"6f1c0000-0000-4000-8000-000000000000","status":"validated","source":"auto"}`,
		"backtest_charts": `{"type":"backtest_charts","series":[{"name":"equity","points":[[0,100],[1,103.5],["2024-01-03",99]]}],"metrics":{"sharpe":1.4,"max_drawdown":0.12},"source":"auto"}`,
		"choice_prompt": `{"type":"choice_prompt","question":"Confirm BTC momentum?",` +
			`"options":[{"id":"confirm","label":"Confirm"},{"id":"revise","label":"Change the rules"}]}`,
		"choice_prompt auto":  `{"type":"choice_prompt","missing_fields":["strategy_status"],"source":"auto"}`,
		"metric_table":        `{"type":"metric_table","title":"Backtest","columns":["Metric","Value"],"rows":[["Sharpe ratio","1.4"],["Trades",42],["Note",null]]}`,
		"scenario_table":      `{"type":"scenario_table","scenario_set_id":"scn-1","columns":["Scenario","Shock"],"rows":[["Flash crash","-20% in 1 hour"]]}`,
		"stress_report":       `{"type":"stress_report","stress_report_id":"rep-1","worst_scenario":"COVID crash","worst_drawdown":0.19,"rows":[["COVID crash","-14%","19%"]]}`,
		"stress_report pass":  `{"type":"stress_report","stress_report_id":"rep-1","verdict":"pass","worst_drawdown":0.19}`,
		"deployment_summary":  `{"type":"deployment_summary","target":"paper","risk_guard_status":"armed","limits":{"max_position":0.1,"max_daily_loss":0.03}}`,
		"deployment blocked":  `{"type":"deployment_summary","target":"paper","deployment_status":"blocked","blocker_code":"risk_limit_exceeded","breach":{"limit":"max_daily_loss","value":0.041,"limit_value":0.03}}`,
		"rollout_status":      `{"type":"rollout_status","deployment_id":"dep-1","rollout_status":"done","steps":[{"name":"Package","status":"done"}]}`,
		"unknown extra field": `{"type":"strategy_ref","strategy_id":"s-1","note":"the model may add context"}`,
	}
}

func TestValidCards(t *testing.T) {
	v, err := genui.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for name, card := range validCards() {
		t.Run(name, func(t *testing.T) {
			if err := v.Validate(json.RawMessage(card)); err != nil {
				t.Errorf("valid card refused: %v", err)
			}
		})
		var head struct{ Type string }
		_ = json.Unmarshal([]byte(card), &head)
		seen[head.Type] = true
	}
	for _, typ := range genui.Types() {
		if !seen[typ] {
			t.Errorf("no valid %s card in the table", typ)
		}
	}
}

func TestInvalidCards(t *testing.T) {
	cases := []struct {
		name, card string
		typ        string   // the type the error names
		want       []string // fragments the reason must hold, each
	}{
		{"not JSON", `{"type":`, "", []string{"not JSON"}},
		{"not an object", `["strategy_card"]`, "", []string{"(card)", "got array, want object"}},
		{"no type", `{"name":"x"}`, "", []string{"(card)", "missing property 'type'"}},
		{"unknown type", `{"type":"pie_chart"}`, "pie_chart", []string{"/type", "strategy_card"}},
		{"strategy_card without spec", `{"type":"strategy_card","name":"x"}`, "strategy_card", []string{"missing property 'spec'"}},
		{"strategy_card with a bad status", `{"type":"strategy_card","name":"x","spec":{},"status":"live"}`, "strategy_card", []string{"/status", "'draft'"}},
		{"strategy_ref with an empty id", `{"type":"strategy_ref","strategy_id":""}`, "strategy_ref", []string{"/strategy_id", "minLength"}},
		{"backtest point with a string y", `{"type":"backtest_charts","series":[{"name":"equity","points":[[0,"100"]]}]}`, "backtest_charts", []string{"/series/0/points/0/1", "want number"}},
		{"backtest point with three values", `{"type":"backtest_charts","series":[{"name":"e","points":[[0,1,2]]}]}`, "backtest_charts", []string{"/series/0/points/0"}},
		{"backtest without series", `{"type":"backtest_charts","series":[]}`, "backtest_charts", []string{"/series", "minItems"}},
		{"metric that is not a number", `{"type":"backtest_charts","series":[{"name":"e","points":[[0,1]]}],"metrics":{"sharpe":"high"}}`, "backtest_charts", []string{"/metrics/sharpe", "want number"}},
		{"choice_prompt with neither form", `{"type":"choice_prompt","question":"Which?"}`, "choice_prompt", []string{"missing property 'options'", "missing property 'missing_fields'"}},
		{"choice option without label", `{"type":"choice_prompt","question":"Which?","options":[{"id":"a"}]}`, "choice_prompt", []string{"/options/0", "missing property 'label'"}},
		{"metric_table row of objects", `{"type":"metric_table","columns":["a"],"rows":[[{"v":1}]]}`, "metric_table", []string{"/rows/0/0", "got object, want null or number or string"}},
		{"scenario_table without columns", `{"type":"scenario_table","rows":[]}`, "scenario_table", []string{"missing property 'columns'"}},
		{"stress_report drawdown as a percent", `{"type":"stress_report","stress_report_id":"r","worst_drawdown":19}`, "stress_report", []string{"/worst_drawdown", "maximum"}},
		{"blocked deployment without blocker_code", `{"type":"deployment_summary","target":"paper","deployment_status":"blocked"}`, "deployment_summary", []string{"missing property 'blocker_code'"}},
		{"deployment limit over 1", `{"type":"deployment_summary","target":"paper","limits":{"max_daily_loss":3}}`, "deployment_summary", []string{"/limits/max_daily_loss"}},
		{"rollout step with an unknown status", `{"type":"rollout_status","deployment_id":"d","rollout_status":"done","steps":[{"name":"a","status":"ok"}]}`, "rollout_status", []string{"/steps/0/status"}},
		{"rollout without deployment_id", `{"type":"rollout_status","rollout_status":"done"}`, "rollout_status", []string{"missing property 'deployment_id'"}},
		{"a bad source", `{"type":"strategy_ref","strategy_id":"s","source":"llm"}`, "strategy_ref", []string{"/source"}},
	}
	v, err := genui.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Validate(json.RawMessage(tc.card))
			var ce *genui.CardError
			if !errors.As(err, &ce) || !errors.Is(err, genui.ErrInvalidCard) {
				t.Fatalf("Validate = %v, want a *CardError matching ErrInvalidCard", err)
			}
			if ce.Type != tc.typ {
				t.Errorf("Type = %q, want %q", ce.Type, tc.typ)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("reason %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestReasonReadsWell pins the whole reason of one refusal: the type, then each failed rule
// led by the JSON pointer of the value at fault.
func TestReasonReadsWell(t *testing.T) {
	err := genui.Validate(json.RawMessage(`{"type":"choice_prompt","question":"Which?","options":[{"id":"a"},{"label":"B"}]}`))
	want := "genui choice_prompt card does not match the schema: /options/0: missing property 'label'; /options/1: missing property 'id'"
	if err == nil || err.Error() != want {
		t.Errorf("reason\n got %v\nwant %s", err, want)
	}
}

// TestReasonIsStable: a card failing in several properties reads the same every time,
// though the validator visits an object's properties in map order.
func TestReasonIsStable(t *testing.T) {
	v, err := genui.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	card := json.RawMessage(`{"type":"rollout_status","rollout_status":"","steps":[{"x":"0"}],"source":"llm"}`)
	first := v.Validate(card)
	for range 50 {
		if again := v.Validate(card); fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("reasons differ:\n%v\n%v", first, again)
		}
	}
}

// TestSchemaDocument checks the served document: 2020-12, the id the validator uses, and
// one $defs entry per card type, each requiring its type.
func TestSchemaDocument(t *testing.T) {
	var doc struct {
		Schema string                     `json:"$schema"`
		ID     string                     `json:"$id"`
		Defs   map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(genui.Schema(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "https://json-schema.org/draft/2020-12/schema" || doc.ID != genui.SchemaID {
		t.Errorf("$schema %q, $id %q", doc.Schema, doc.ID)
	}
	for _, typ := range genui.Types() {
		var def struct {
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(doc.Defs[typ], &def); err != nil || !strings.Contains(strings.Join(def.Required, ","), "type") {
			t.Errorf("$defs/%s: %v, required %v; want a definition that requires type", typ, err, def.Required)
		}
	}
	if !genui.IsType(genui.RolloutStatus) || genui.IsType("pie_chart") {
		t.Error("IsType disagrees with Types")
	}
}

func BenchmarkValidate(b *testing.B) {
	card := json.RawMessage(validCards()["deployment blocked"])
	b.Run("compile and validate", func(b *testing.B) {
		for b.Loop() {
			if err := genui.Validate(card); err != nil {
				b.Fatal(err)
			}
		}
	})
	v, err := genui.NewValidator()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("validate", func(b *testing.B) {
		for b.Loop() {
			if err := v.Validate(card); err != nil {
				b.Fatal(err)
			}
		}
	})
}
