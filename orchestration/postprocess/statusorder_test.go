package postprocess

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/phases"
)

// TestPatchesDoNotUndoDecisions: a status field moves forward by patch, back only to its
// revise state, and a field only the server writes is not set by patch; such a field is
// refused on its own, named in rejected_patch, and the rest of the patch is applied.
func TestPatchesDoNotUndoDecisions(t *testing.T) {
	tests := []struct {
		name       string
		phase      phases.Phase
		block      handlers.Artifacts
		patch      string
		wantBlock  handlers.Artifacts
		wantPatch  string // applied; "" for none
		wantHeld   string // rejected_patch.patch; "" for none
		wantReason string
	}{
		{"a confirmed strategy stays confirmed", phases.Strategy,
			handlers.Artifacts{"strategy_status": "confirmed", "backtest_status": "running"},
			`{"strategy_status":"validated","backtest_status":"completed"}`,
			handlers.Artifacts{"strategy_status": "confirmed", "backtest_status": "completed"},
			`{"backtest_status":"completed"}`, `{"strategy_status":"validated"}`, `strategy_status: "confirmed" cannot go back to "validated"`},
		{"revising a confirmed strategy is back to draft", phases.Strategy,
			handlers.Artifacts{"strategy_status": "confirmed"}, `{"strategy_status":"draft"}`,
			handlers.Artifacts{"strategy_status": "draft"}, `{"strategy_status":"draft"}`, "", ""},
		{"forward is fine", phases.Strategy,
			handlers.Artifacts{"strategy_status": "draft"}, `{"strategy_status":"validated"}`,
			handlers.Artifacts{"strategy_status": "validated"}, `{"strategy_status":"validated"}`, "", ""},
		{"the same status again is fine", phases.Strategy,
			handlers.Artifacts{"strategy_status": "confirmed"}, `{"strategy_status":"confirmed"}`,
			handlers.Artifacts{"strategy_status": "confirmed"}, `{"strategy_status":"confirmed"}`, "", ""},
		{"another backtest may run", phases.Strategy,
			handlers.Artifacts{"strategy_status": "validated", "backtest_status": "completed"}, `{"backtest_status":"running"}`,
			handlers.Artifacts{"strategy_status": "validated", "backtest_status": "running"}, `{"backtest_status":"running"}`, "", ""},
		{"a passed stress test is not pending again", phases.StressTest,
			handlers.Artifacts{"stress_test_decision": "pass"}, `{"stress_test_decision":"pending"}`,
			handlers.Artifacts{"stress_test_decision": "pass"}, `{}`, `{"stress_test_decision":"pending"}`, `stress_test_decision: "pass" cannot go back to "pending"`},
		{"an armed guard is not pending again, a done rollout not rolling", phases.Deployment,
			handlers.Artifacts{"risk_guard_status": "armed", "rollout_status": "done"}, `{"risk_guard_status":"pending","rollout_status":"rolling"}`,
			handlers.Artifacts{"risk_guard_status": "armed", "rollout_status": "done"}, `{}`, `{"risk_guard_status":"pending","rollout_status":"rolling"}`, "rollout_status"},
		{"a guard checked again may arm", phases.Deployment,
			handlers.Artifacts{"risk_guard_status": "failed"}, `{"risk_guard_status":"armed"}`,
			handlers.Artifacts{"risk_guard_status": "armed"}, `{"risk_guard_status":"armed"}`, "", ""},
		{"a blocked deployment is prepared again", phases.Deployment,
			handlers.Artifacts{"deployment_status": "blocked"}, `{"deployment_status":"ready"}`,
			handlers.Artifacts{"deployment_status": "ready"}, `{"deployment_status":"ready"}`, "", ""},
		{"a reply cannot claim the backtest's figures", phases.Strategy,
			handlers.Artifacts{"backtest_status": "running"}, `{"backtest_status":"completed","backtest_metrics":{"sharpe":9}}`,
			handlers.Artifacts{"backtest_status": "completed"}, `{"backtest_status":"completed"}`, `{"backtest_metrics":{"sharpe":9}}`,
			"backtest_metrics: written by the server"},
		{"nor the stress run's", phases.StressTest,
			handlers.Artifacts{}, `{"stress_metrics":{"worst_loss":0}}`,
			handlers.Artifacts{}, `{}`, `{"stress_metrics":{"worst_loss":0}}`, "stress_metrics: written by the server"},
		{"a held field and a bad one: the whole patch is refused, both named", phases.Strategy,
			handlers.Artifacts{"strategy_status": "confirmed"}, `{"strategy_status":"validated","backtest_status":"sometimes"}`,
			handlers.Artifacts{"strategy_status": "confirmed"}, "", `{"backtest_status":"sometimes","strategy_status":"validated"}`, "backtest_status"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			block, applied, rejected := applyPatch(tc.phase, tc.block, json.RawMessage(tc.patch))
			if !reflect.DeepEqual(block, tc.wantBlock) {
				t.Errorf("block = %v, want %v", block, tc.wantBlock)
			}
			if string(applied) != tc.wantPatch {
				t.Errorf("applied patch = %s, want %s", applied, tc.wantPatch)
			}
			switch {
			case tc.wantHeld == "" && rejected != nil:
				t.Errorf("rejected_patch = %s %v, want none", rejected.Patch, rejected.Reasons)
			case tc.wantHeld != "" && rejected == nil:
				t.Errorf("no rejected_patch, want %s", tc.wantHeld)
			case rejected != nil:
				if string(rejected.Patch) != tc.wantHeld {
					t.Errorf("rejected_patch.patch = %s, want %s", rejected.Patch, tc.wantHeld)
				}
				if !strings.Contains(strings.Join(rejected.Reasons, "; "), tc.wantReason) {
					t.Errorf("rejected_patch.reasons = %v, want one naming %s", rejected.Reasons, tc.wantReason)
				}
			}
		})
	}
}
