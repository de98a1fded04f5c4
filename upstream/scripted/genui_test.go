package scripted

import (
	"encoding/json"
	"github.com/phaseflow/phaseflow/store"
	"testing"

	"github.com/phaseflow/phaseflow/genui"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
)

// TestScenarioCardsMatchTheGenUISchema holds every card of every scenario, in both
// languages, against the GenUI schema: the cards the model sends in <AGENT_UI_JSON> and the
// ones the server fills in from the scenario's tool calls (strategy_ref, backtest_charts)
// and missing fields (choice_prompt), exactly as postprocess.FinishGenUI builds them.
// Together they must cover every card type, so a type nothing exercises is noticed.
func TestScenarioCardsMatchTheGenUISchema(t *testing.T) {
	v, err := genui.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for name, sc := range scenarios() {
		for _, lang := range []language{english, chinese} {
			t.Run(name+"/"+string(lang), func(t *testing.T) {
				r, ok := sc.replies[lang]
				if !ok {
					t.Fatalf("no %s reply", lang)
				}
				vars := newVars(nil)
				r = r.with(vars)
				var cards []json.RawMessage
				if r.ui != "" {
					if err := json.Unmarshal([]byte(r.ui), &cards); err != nil {
						t.Fatalf("ui is not a JSON array: %v\n%s", err, r.ui)
					}
				}
				for i, c := range cards {
					if err := v.Validate(c); err != nil {
						t.Errorf("the model's card %d: %v\n%s", i, err, c)
					}
				}
				res := postprocess.FinishGenUI(cards, postprocess.GenUIContext{
					Allowed: genui.Types(), ToolCalls: toolRecords(withVars(sc.calls, vars)), Ask: []string{"strategy_status"},
				})
				if len(res.Dropped) > 0 {
					t.Errorf("FinishGenUI dropped %q", res.Dropped)
				}
				for _, it := range res.Items {
					var head struct{ Type string }
					_ = json.Unmarshal(it, &head)
					seen[head.Type] = true
				}
			})
		}
	}
	for _, typ := range genui.Types() {
		if !seen[typ] {
			t.Errorf("no scenario sends a %s card", typ)
		}
	}
}

// toolRecords turns scripted calls into the records the server keeps of them.
func toolRecords(calls []toolCall) []store.ToolCall {
	out := make([]store.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = store.ToolCall{ServerLabel: c.server, Name: c.name, Arguments: store.JSON(c.arguments),
			Status: store.ToolSuccess, Output: c.output}
		if c.failure != "" {
			out[i].Status, out[i].Output, out[i].Error = store.ToolFailure, "", c.failure
		}
	}
	return out
}
