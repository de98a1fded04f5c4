package phases

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckArtifacts(t *testing.T) {
	cases := []struct {
		name  string
		phase Phase
		a     map[string]any
		want  []FieldError
	}{
		{"empty block", Strategy, map[string]any{}, nil},
		{"nil block", Deployment, nil, nil},
		{"strategy initial block", Strategy, map[string]any{
			"strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false,
		}, nil},
		{"strategy full block", Strategy, map[string]any{
			"summary": "mean reversion on SPY", "notes": "", "strategy_id": "s-1",
			"strategy_status": "confirmed", "backtest_status": "completed",
			"advance_to_stress_test": true,
			"strategy_draft":         map[string]any{"name": "MR", "spec": map[string]any{"lookback": 20.0}},
		}, nil},
		{"null means unset", Strategy, map[string]any{
			"strategy_id": nil, "strategy_status": nil, "strategy_draft": nil, "summary": nil,
		}, nil},
		{"unknown field", Strategy, map[string]any{"strategy_name": "x"}, []FieldError{
			{"strategy_name", "unknown field"},
		}},
		{"null unknown field is still unknown", Strategy, map[string]any{"foo": nil}, []FieldError{
			{"foo", "unknown field"},
		}},
		{"field of another phase", StressTest, map[string]any{"strategy_id": "s-1"}, []FieldError{
			{"strategy_id", "unknown field"},
		}},
		{"enum value outside the list", Strategy, map[string]any{"strategy_status": "done"}, []FieldError{
			{"strategy_status", `want one of draft|validated|confirmed, got "done"`},
		}},
		{"enum values are case-sensitive", StressTest, map[string]any{"stress_test_decision": "PASS"}, []FieldError{
			{"stress_test_decision", `want one of pending|pass|revise, got "PASS"`},
		}},
		{"enum given a boolean", Deployment, map[string]any{"risk_guard_status": true}, []FieldError{
			{"risk_guard_status", "want one of pending|armed|failed, got true"},
		}},
		{"bool given as a string", Strategy, map[string]any{"advance_to_stress_test": "true"}, []FieldError{
			{"advance_to_stress_test", `want a boolean, got "true"`},
		}},
		{"string given a number", Deployment, map[string]any{"deployment_id": 42.0}, []FieldError{
			{"deployment_id", "want a string, got the number 42"},
		}},
		{"common field given an array", StressTest, map[string]any{"summary": []any{"a"}}, []FieldError{
			{"summary", "want a string, got an array"},
		}},
		{"draft is not an object", Strategy, map[string]any{"strategy_draft": "MR"}, []FieldError{
			{"strategy_draft", `want an object, got "MR"`},
		}},
		{"draft without name and spec", Strategy, map[string]any{"strategy_draft": map[string]any{}}, []FieldError{
			{"strategy_draft.name", "required"},
			{"strategy_draft.spec", "required"},
		}},
		{"draft with wrong and unknown keys", Strategy, map[string]any{"strategy_draft": map[string]any{
			"name": "MR", "spec": []any{}, "owner": "me",
		}}, []FieldError{
			{"strategy_draft.owner", "unknown field"},
			{"strategy_draft.spec", "want an object, got an array"},
		}},
		{"every error reported, sorted", Deployment, map[string]any{
			"rollout_status": "finished", "deployment_status": "live", "zeta": 1.0, "blocker_code": "E1",
		}, []FieldError{
			{"deployment_status", `want one of ready|deployed|completed|blocked, got "live"`},
			{"rollout_status", `want one of pending|rolling|done, got "finished"`},
			{"zeta", "unknown field"},
		}},
		{"completed has only the common fields", Completed, map[string]any{"summary": "done", "deployment_id": "d"}, []FieldError{
			{"deployment_id", "unknown field"},
		}},
		{"unknown phase", Phase("review"), map[string]any{}, []FieldError{
			{"", `unknown phase "review"`},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckArtifacts(tc.phase, tc.a)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CheckArtifacts(%s) mismatch (-want +got):\n%s", tc.phase, diff)
			}
		})
	}
}

func TestFields(t *testing.T) {
	cases := []struct {
		name  string
		phase Phase
		want  []string
	}{
		{"strategy", Strategy, []string{"summary", "notes", "strategy_id", "strategy_status",
			"backtest_status", "advance_to_stress_test", "strategy_draft", "backtest_metrics"}},
		{"stress test", StressTest, []string{"summary", "notes", "scenario_set_id",
			"stress_report_id", "stress_test_decision", "stress_metrics"}},
		{"deployment", Deployment, []string{"summary", "notes", "deployment_target",
			"risk_guard_status", "rollout_status", "deployment_id", "deployment_status", "blocker_code"}},
		{"completed", Completed, []string{"summary", "notes"}},
		{"unknown", Phase("x"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range Fields(tc.phase) {
				got = append(got, f.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Fields(%s) names mismatch (-want +got):\n%s", tc.phase, diff)
			}
		})
	}
}

// TestFieldsAreFresh guards against a caller changing the allowed values for everyone.
func TestFieldsAreFresh(t *testing.T) {
	f := Fields(Strategy)
	for i := range f {
		if f[i].Kind == KindEnum {
			f[i].Allowed[0] = "tampered"
		}
	}
	if errs := CheckArtifacts(Strategy, map[string]any{"strategy_status": "draft"}); errs != nil {
		t.Fatalf("changing a returned Field changed the check: %v", errs)
	}
}

func TestFieldKinds(t *testing.T) {
	for _, p := range []Phase{Strategy, StressTest, Deployment, Completed} {
		for _, f := range Fields(p) {
			switch f.Kind {
			case KindEnum:
				if len(f.Allowed) == 0 {
					t.Errorf("%s.%s: enum without values", p, f.Name)
				}
			case KindString, KindBool, KindObject:
				if f.Allowed != nil {
					t.Errorf("%s.%s: %s with allowed values", p, f.Name, f.Kind)
				}
			default:
				t.Errorf("%s.%s: unknown kind %q", p, f.Name, f.Kind)
			}
		}
	}
}

func TestFieldErrorString(t *testing.T) {
	cases := []struct {
		name string
		e    FieldError
		want string
	}{
		{"with field", FieldError{"strategy_id", "want a string"}, "strategy_id: want a string"},
		{"whole block", FieldError{"", "unknown phase"}, "unknown phase"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.e.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if got := tc.e.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}
