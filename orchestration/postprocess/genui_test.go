package postprocess

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/genui"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/store"
)

func TestFinishGenUI(t *testing.T) {
	validated := store.ToolCall{Name: "validate_strategy", Status: store.ToolSuccess, Output: `{"strategy_id":"s-1","status":"validated"}`}
	failed := store.ToolCall{Name: "validate_strategy", Status: store.ToolFailure, Error: "bad"}
	backtest := store.ToolCall{Name: "run_backtest", Status: store.ToolSuccess, Output: `{"series":[{"name":"equity","points":[[0,1]]}],"metrics":{"sharpe":1.2}}`}
	allowed := []string{"strategy_ref", "strategy_card", "backtest_charts", "choice_prompt"}
	card := json.RawMessage(`{"type":"strategy_card","name":"x","spec":{"symbol":"BTC-USD"}}`)
	broken := json.RawMessage(`{"type":"strategy_card","name":"x","status":"live","spec":{}}`)
	cases := []struct {
		name      string
		items     []json.RawMessage
		ctx       GenUIContext
		wantTypes string
		dropped   int
	}{
		{"model's own card kept", []json.RawMessage{card}, GenUIContext{Allowed: allowed}, "strategy_card", 0},
		{"strategy_ref filled from validate_strategy", nil, GenUIContext{Allowed: allowed, ToolCalls: []store.ToolCall{validated}}, "strategy_ref", 0},
		{"no strategy_ref from a failed call", nil, GenUIContext{Allowed: allowed, ToolCalls: []store.ToolCall{failed}}, "", 0},
		{"the model's strategy_ref is not doubled", []json.RawMessage{json.RawMessage(`{"type":"strategy_ref","strategy_id":"s-9"}`)}, GenUIContext{Allowed: allowed, ToolCalls: []store.ToolCall{validated}}, "strategy_ref", 0},
		{"backtest_charts filled from series", nil, GenUIContext{Allowed: allowed, ToolCalls: []store.ToolCall{backtest}}, "backtest_charts", 0},
		{"choice_prompt when fields are missing and nothing was asked", nil, GenUIContext{Allowed: allowed, Ask: []string{"strategy_id"}, Reply: "<final>Here it is.</final>"}, "choice_prompt", 0},
		{"no choice_prompt when the model asked", nil, GenUIContext{Allowed: allowed, Ask: []string{"strategy_id"}, Reply: "<final>Here is a draft.\n\nWhich asset?\n<!-- <serp_queries>\n[]\n</serp_queries> -->\n</final>"}, "", 0},
		{"a quoted question is not the model asking", nil, GenUIContext{Allowed: allowed, Ask: []string{"strategy_id"}, Reply: "<final>You wrote: \"what now?\"\n\nHere is a draft.</final>"}, "choice_prompt", 0},
		{"a type the phase does not allow is dropped", []json.RawMessage{json.RawMessage(`{"type":"deployment_summary"}`), card}, GenUIContext{Allowed: allowed}, "strategy_card", 1},
		{"a card that breaks the schema is dropped", []json.RawMessage{broken, card}, GenUIContext{Allowed: allowed}, "strategy_card", 1},
		{"filled cards obey the phase too", nil, GenUIContext{Allowed: []string{"stress_report"}, ToolCalls: []store.ToolCall{validated}}, "", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := FinishGenUI(tc.items, tc.ctx)
			var types []string
			for _, it := range res.Items {
				types = append(types, typeOf(it))
			}
			if got := strings.Join(types, ","); got != tc.wantTypes || len(res.Dropped) != tc.dropped {
				t.Fatalf("types %q dropped %v, want %q and %d dropped", got, res.Dropped, tc.wantTypes, tc.dropped)
			}
		})
	}
}

// TestFinishGenUIAsksForTheMissingFields: the choice_prompt the server adds carries the
// phase's question in words when one is given, and still passes the schema.
func TestFinishGenUIAsksForTheMissingFields(t *testing.T) {
	question := func(missing []string) handlers.Missing {
		return handlers.Missing{Question: "Still needed:", Fields: missing, Labels: []string{"Where it runs"}}
	}
	res := FinishGenUI(nil, GenUIContext{Allowed: []string{"choice_prompt"}, Ask: []string{"deployment_target"},
		Reply: "<final>Done.</final>", Question: question})
	if len(res.Items) != 1 || len(res.Dropped) != 0 {
		t.Fatalf("items %s dropped %v", res.Items, res.Dropped)
	}
	var card map[string]any
	if err := json.Unmarshal(res.Items[0], &card); err != nil {
		t.Fatal(err)
	}
	if card["question"] != "Still needed:\n- Where it runs" || card["source"] != "auto" {
		t.Fatalf("card %v, want the question", card)
	}
	want := []any{map[string]any{"id": "deployment_target", "label": "Where it runs"}}
	if !cmp.Equal(card["options"], want) {
		t.Fatalf("options %v, want %v: one a field, labelled in words", card["options"], want)
	}
}

// TestFinishGenUIDropsWithTheSchemaReason checks that a refused card's reason names the card
// and the rule it broke, so dropped_genui tells the model's author what to fix.
func TestFinishGenUIDropsWithTheSchemaReason(t *testing.T) {
	res := FinishGenUI([]json.RawMessage{json.RawMessage(`{"type":"choice_prompt","question":"Which?","options":[{"id":"a"}]}`)},
		GenUIContext{Allowed: []string{"choice_prompt"}})
	want := "genui choice_prompt card does not match the schema: /options/0: missing property 'label'"
	if len(res.Items) != 0 || len(res.Dropped) != 1 || res.Dropped[0] != want {
		t.Errorf("items %s, dropped %q; want nothing kept and %q", res.Items, res.Dropped, want)
	}
}

// TestFinishGenUIWithAKeptValidator checks that a caller's Validator is used as the one
// compiled per call would be.
func TestFinishGenUIWithAKeptValidator(t *testing.T) {
	v, err := genui.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	res := FinishGenUI([]json.RawMessage{json.RawMessage(`{"type":"strategy_ref"}`), json.RawMessage(`{"type":"strategy_ref","strategy_id":"s-1"}`)},
		GenUIContext{Allowed: []string{"strategy_ref"}, Schema: v})
	if len(res.Items) != 1 || len(res.Dropped) != 1 || !strings.Contains(res.Dropped[0], "missing property 'strategy_id'") {
		t.Errorf("items %s, dropped %q", res.Items, res.Dropped)
	}
}
