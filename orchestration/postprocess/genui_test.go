package postprocess

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFinishGenUI(t *testing.T) {
	validated := ToolRecord{Name: "validate_strategy", Status: "success", Output: `{"strategy_id":"s-1","status":"validated"}`}
	failed := ToolRecord{Name: "validate_strategy", Status: "failure", Error: "bad"}
	backtest := ToolRecord{Name: "run_backtest", Status: "success", Output: `{"series":[{"name":"equity","points":[[0,1]]}],"metrics":{"sharpe":1.2}}`}
	allowed := []string{"strategy_ref", "strategy_card", "backtest_charts", "choice_prompt"}
	card := json.RawMessage(`{"type":"strategy_card","name":"x"}`)
	cases := []struct {
		name      string
		items     []json.RawMessage
		ctx       GenUIContext
		wantTypes string
		dropped   int
	}{
		{"model's own card kept", []json.RawMessage{card}, GenUIContext{Allowed: allowed}, "strategy_card", 0},
		{"strategy_ref filled from validate_strategy", nil, GenUIContext{Allowed: allowed, ToolCalls: []ToolRecord{validated}}, "strategy_ref", 0},
		{"no strategy_ref from a failed call", nil, GenUIContext{Allowed: allowed, ToolCalls: []ToolRecord{failed}}, "", 0},
		{"the model's strategy_ref is not doubled", []json.RawMessage{json.RawMessage(`{"type":"strategy_ref","strategy_id":"s-9"}`)}, GenUIContext{Allowed: allowed, ToolCalls: []ToolRecord{validated}}, "strategy_ref", 0},
		{"backtest_charts filled from series", nil, GenUIContext{Allowed: allowed, ToolCalls: []ToolRecord{backtest}}, "backtest_charts", 0},
		{"choice_prompt when fields are missing and nothing was asked", nil, GenUIContext{Allowed: allowed, MissingFields: []string{"strategy_id"}, Reply: "<final>Here it is.</final>"}, "choice_prompt", 0},
		{"no choice_prompt when the model asked", nil, GenUIContext{Allowed: allowed, MissingFields: []string{"strategy_id"}, Reply: "<final>Here is a draft.\n\nWhich asset?\n<!-- <serp_queries>\n[]\n</serp_queries> -->\n</final>"}, "", 0},
		{"a quoted question is not the model asking", nil, GenUIContext{Allowed: allowed, MissingFields: []string{"strategy_id"}, Reply: "<final>You wrote: \"what now?\"\n\nHere is a draft.</final>"}, "choice_prompt", 0},
		{"a type the phase does not allow is dropped", []json.RawMessage{json.RawMessage(`{"type":"deployment_summary"}`), card}, GenUIContext{Allowed: allowed}, "strategy_card", 1},
		{"filled cards obey the phase too", nil, GenUIContext{Allowed: []string{"stress_report"}, ToolCalls: []ToolRecord{validated}}, "", 1},
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
