package handlers

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phaseflow/phaseflow/phases"
)

// mustValid fails when a test's artifacts are not a block the orchestrator would accept, so a
// typo in a test value cannot make a rule look right.
func mustValid(t *testing.T, p phases.Phase, a Artifacts) {
	t.Helper()
	if errs := phases.CheckArtifacts(p, a); errs != nil {
		t.Fatalf("test artifacts invalid for %s: %v", p, errs)
	}
}

func handlerFor(t *testing.T, p phases.Phase) Handler {
	t.Helper()
	h, ok := New().For(p)
	if !ok {
		t.Fatalf("no handler for %s", p)
	}
	return h
}

func TestRegistry(t *testing.T) {
	cases := []struct {
		name   string
		phase  phases.Phase
		ok     bool
		stages []string
	}{
		{"strategy", phases.Strategy, true, []string{"draft", "backtest", "confirm"}},
		{"stress test", phases.StressTest, true, []string{"bootstrap", "scenario", "feedback"}},
		{"deployment", phases.Deployment, true, []string{"prepare", "rollout", "monitor"}},
		{"completed has no handler", phases.Completed, false, nil},
		{"unknown phase", phases.Phase("review"), false, nil},
	}
	r := New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := r.For(tc.phase)
			if ok != tc.ok {
				t.Fatalf("For(%s) ok = %v, want %v", tc.phase, ok, tc.ok)
			}
			if ok && h.Phase() != tc.phase {
				t.Errorf("For(%s).Phase() = %s", tc.phase, h.Phase())
			}
			if diff := cmp.Diff(tc.stages, r.Stages(tc.phase)); diff != "" {
				t.Errorf("Stages(%s) (-want +got):\n%s", tc.phase, diff)
			}
		})
	}
}

func TestInitialArtifacts(t *testing.T) {
	cases := []struct {
		name      string
		phase     phases.Phase
		want      Artifacts
		wantStage string
	}{
		{"strategy", phases.Strategy, Artifacts{"strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false}, StageDraft},
		{"stress test", phases.StressTest, Artifacts{"stress_test_decision": "pending"}, StageBootstrap},
		{"deployment", phases.Deployment, Artifacts{"deployment_status": "ready", "risk_guard_status": "pending", "rollout_status": "pending"}, StagePrepare},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := handlerFor(t, tc.phase)
			got := h.InitialArtifacts()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("InitialArtifacts (-want +got):\n%s", diff)
			}
			mustValid(t, tc.phase, got)
			if s := h.Stage(got); s != tc.wantStage {
				t.Errorf("Stage(initial) = %q, want %q", s, tc.wantStage)
			}
			if r := h.PostProcess(PostInput{Artifacts: got}); r.Completed {
				t.Errorf("initial artifacts complete the phase: %+v", r)
			}
			got["tampered"] = true
			if _, ok := h.InitialArtifacts()["tampered"]; ok {
				t.Error("InitialArtifacts shares its map between calls")
			}
		})
	}
}

func TestStage(t *testing.T) {
	cases := []struct {
		name  string
		phase phases.Phase
		a     Artifacts
		want  string
	}{
		{"strategy: nothing yet", phases.Strategy, Artifacts{}, StageDraft},
		{"strategy: draft proposed, not validated", phases.Strategy, Artifacts{"strategy_status": "draft",
			"strategy_draft": map[string]any{"name": "MR", "spec": map[string]any{}}}, StageDraft},
		{"strategy: validated claims without id stay in draft", phases.Strategy, Artifacts{"strategy_status": "validated", "backtest_status": "completed"}, StageDraft},
		{"strategy: validated, no backtest", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "none"}, StageBacktest},
		{"strategy: id with draft status backtests", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "draft"}, StageBacktest},
		{"strategy: backtest running", phases.Strategy, Artifacts{"strategy_id": "s-1", "backtest_status": "running"}, StageBacktest},
		{"strategy: backtest failed", phases.Strategy, Artifacts{"strategy_id": "s-1", "backtest_status": "failed"}, StageBacktest},
		{"strategy: backtest completed", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "completed"}, StageConfirm},
		{"strategy: confirmed", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "completed"}, StageConfirm},

		{"stress: nothing yet", phases.StressTest, Artifacts{"stress_test_decision": "pending"}, StageBootstrap},
		{"stress: report without scenario set", phases.StressTest, Artifacts{"stress_report_id": "r-1"}, StageBootstrap},
		{"stress: scenario set chosen", phases.StressTest, Artifacts{"scenario_set_id": "set-1"}, StageScenario},
		{"stress: report ready", phases.StressTest, Artifacts{"scenario_set_id": "set-1", "stress_report_id": "r-1"}, StageFeedback},

		{"deployment: nothing yet", phases.Deployment, Artifacts{"deployment_status": "ready"}, StagePrepare},
		{"deployment: target, guard pending", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "pending"}, StagePrepare},
		{"deployment: guard armed, no target", phases.Deployment, Artifacts{"risk_guard_status": "armed"}, StagePrepare},
		{"deployment: guard failed", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "failed"}, StagePrepare},
		{"deployment: armed and ready", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "armed", "deployment_status": "ready", "rollout_status": "pending"}, StageRollout},
		{"deployment: rolling", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "armed", "deployment_status": "deployed", "rollout_status": "rolling"}, StageRollout},
		{"deployment: rollout done but still ready", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "armed", "deployment_status": "ready", "rollout_status": "done"}, StageRollout},
		{"deployment: deployed and rolled out", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "armed", "deployment_status": "deployed", "rollout_status": "done"}, StageMonitor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustValid(t, tc.phase, tc.a)
			if got := handlerFor(t, tc.phase).Stage(tc.a); got != tc.want {
				t.Errorf("Stage = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPostProcess(t *testing.T) {
	done := Artifacts{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "completed", "advance_to_stress_test": true}
	cases := []struct {
		name  string
		phase phases.Phase
		a     Artifacts
		calls []ToolResult
		want  Report
	}{
		{"strategy: initial", phases.Strategy, Artifacts{"strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false}, nil, Report{
			MissingFields: []string{"strategy_id", "backtest_status", "strategy_status", "advance_to_stress_test"},
			Reason:        "Strategy phase still needs strategy_id, backtest_status, strategy_status, advance_to_stress_test.",
			Evidence:      map[string]any{"strategy_id": nil, "strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false},
		}},
		{"strategy: confirmed but not asked to advance", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "completed", "advance_to_stress_test": false}, nil, Report{
			MissingFields: []string{"advance_to_stress_test"},
			Reason:        "Strategy phase still needs advance_to_stress_test.",
			Evidence:      map[string]any{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "completed", "advance_to_stress_test": false},
		}},
		{"strategy: advance asked before confirmation", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "completed", "advance_to_stress_test": true}, nil, Report{
			MissingFields: []string{"strategy_status"},
			Reason:        "Strategy phase still needs strategy_status.",
			Evidence:      map[string]any{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "completed", "advance_to_stress_test": true},
		}},
		{"strategy: backtest failed", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "failed", "advance_to_stress_test": true}, []ToolResult{{Name: "run_backtest", Status: "failure"}}, Report{
			MissingFields: []string{"backtest_status"},
			Reason:        "Strategy phase still needs backtest_status.",
			Evidence:      map[string]any{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "failed", "advance_to_stress_test": true},
		}},
		{"strategy: all three hold", phases.Strategy, done, []ToolResult{{Name: "run_backtest", Status: "success"}, {Name: "validate_strategy", Status: "failure"}}, Report{
			Completed: true, NextPhase: phases.StressTest,
			Reason:   "Strategy confirmed with a completed backtest, and the move to stress test was requested.",
			Evidence: map[string]any{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "completed", "advance_to_stress_test": true, "tool_calls": []string{"run_backtest"}},
		}},

		{"stress: pending with nothing", phases.StressTest, Artifacts{"stress_test_decision": "pending"}, nil, Report{
			MissingFields: []string{"scenario_set_id", "stress_report_id", "stress_test_decision"},
			Reason:        "Stress test phase still needs scenario_set_id, stress_report_id, stress_test_decision.",
			Evidence:      map[string]any{"stress_test_decision": "pending", "scenario_set_id": nil, "stress_report_id": nil},
		}},
		{"stress: report in, decision pending", phases.StressTest, Artifacts{"scenario_set_id": "set-1", "stress_report_id": "r-1", "stress_test_decision": "pending"}, nil, Report{
			MissingFields: []string{"stress_test_decision"},
			Reason:        "Stress test phase still needs stress_test_decision.",
			Evidence:      map[string]any{"stress_test_decision": "pending", "scenario_set_id": "set-1", "stress_report_id": "r-1"},
		}},
		{"stress: pass goes to deployment", phases.StressTest, Artifacts{"scenario_set_id": "set-1", "stress_report_id": "r-1", "stress_test_decision": "pass"}, nil, Report{
			Completed: true, NextPhase: phases.Deployment,
			Reason:   "Stress test passed; moving to deployment.",
			Evidence: map[string]any{"stress_test_decision": "pass", "scenario_set_id": "set-1", "stress_report_id": "r-1"},
		}},
		{"stress: revise goes back to strategy", phases.StressTest, Artifacts{"scenario_set_id": "set-1", "stress_report_id": "r-1", "stress_test_decision": "revise"}, []ToolResult{{Name: "get_stress_report", Status: "success"}}, Report{
			Completed: true, NextPhase: phases.Strategy,
			Reason:   "Stress test asked for a revision; back to strategy.",
			Evidence: map[string]any{"stress_test_decision": "revise", "scenario_set_id": "set-1", "stress_report_id": "r-1", "tool_calls": []string{"get_stress_report"}},
		}},

		{"deployment: initial", phases.Deployment, Artifacts{"deployment_status": "ready", "risk_guard_status": "pending", "rollout_status": "pending"}, nil, Report{
			MissingFields: []string{"deployment_target", "risk_guard_status", "deployment_id", "rollout_status", "deployment_status"},
			Reason:        "Deployment phase still needs deployment_target, risk_guard_status, deployment_id, rollout_status, deployment_status.",
			Evidence:      map[string]any{"deployment_status": "ready", "deployment_id": nil, "deployment_target": nil, "risk_guard_status": "pending", "rollout_status": "pending", "blocker_code": nil},
		}},
		{"deployment: deployed, monitoring", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "armed", "deployment_id": "d-1", "rollout_status": "done", "deployment_status": "deployed"}, nil, Report{
			MissingFields: []string{"deployment_status"},
			Reason:        "Deployment phase still needs deployment_status.",
			Evidence:      map[string]any{"deployment_status": "deployed", "deployment_id": "d-1", "deployment_target": "paper", "risk_guard_status": "armed", "rollout_status": "done", "blocker_code": nil},
		}},
		{"deployment: completed ends the session", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "armed", "deployment_id": "d-1", "rollout_status": "done", "deployment_status": "completed"}, nil, Report{
			Completed: true, NextPhase: phases.Completed,
			Reason:   "Deployment completed; the session is done.",
			Evidence: map[string]any{"deployment_status": "completed", "deployment_id": "d-1", "deployment_target": "paper", "risk_guard_status": "armed", "rollout_status": "done", "blocker_code": nil},
		}},
		{"deployment: blocked goes back with its code", phases.Deployment, Artifacts{"deployment_target": "live", "risk_guard_status": "failed", "deployment_status": "blocked", "blocker_code": "RISK_GUARD_FAILED"}, []ToolResult{{Name: "check_risk_guard", Status: "success"}}, Report{
			Completed: true, NextPhase: phases.Strategy,
			Reason:   "Deployment blocked (RISK_GUARD_FAILED); back to strategy.",
			Evidence: map[string]any{"deployment_status": "blocked", "deployment_id": nil, "deployment_target": "live", "risk_guard_status": "failed", "rollout_status": nil, "blocker_code": "RISK_GUARD_FAILED", "tool_calls": []string{"check_risk_guard"}},
		}},
		{"deployment: blocked without a code stays", phases.Deployment, Artifacts{"deployment_status": "blocked"}, nil, Report{
			MissingFields: []string{"blocker_code"},
			Reason:        "Deployment blocked without a blocker_code.",
			Evidence:      map[string]any{"deployment_status": "blocked", "deployment_id": nil, "deployment_target": nil, "risk_guard_status": nil, "rollout_status": nil, "blocker_code": nil},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustValid(t, tc.phase, tc.a)
			got := handlerFor(t, tc.phase).PostProcess(PostInput{Artifacts: tc.a, ToolCalls: tc.calls})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PostProcess (-want +got):\n%s", diff)
			}
			if got.Completed {
				if err := phases.CheckMove(tc.phase, got.NextPhase); err != nil {
					t.Errorf("PostProcess asks for a move the graph refuses: %v", err)
				}
			}
		})
	}
}

// TestNoLegacyRedirect: the old system forced every stress test session back to strategy.
// Nothing but a revise decision may do that here.
func TestNoLegacyRedirect(t *testing.T) {
	h := handlerFor(t, phases.StressTest)
	for _, d := range []any{nil, "pending", "pass"} {
		a := Artifacts{"scenario_set_id": "set-1", "stress_report_id": "r-1", "stress_test_decision": d}
		if r := h.PostProcess(PostInput{Artifacts: a}); r.NextPhase == phases.Strategy {
			t.Errorf("decision %v sends the session back to strategy: %+v", d, r)
		}
	}
}

// fakeSkills answers every name with a text naming it and the locale, keeping a placeholder
// so the test sees it is left for the builder; it fails for the names in missing.
type fakeSkills struct{ missing map[string]bool }

func (f fakeSkills) Text(name, locale string) (string, error) {
	if f.missing[name] {
		return "", fmt.Errorf("no %s", name)
	}
	return name + "@" + locale + " {{missing_fields}}", nil
}

func TestPrompt(t *testing.T) {
	strategyReady := Artifacts{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "completed", "advance_to_stress_test": false}
	cases := []struct {
		name  string
		phase phases.Phase
		in    PromptInput
		want  Pieces
	}{
		{"strategy draft", phases.Strategy, PromptInput{Locale: "en", Stage: StageDraft, Artifacts: Artifacts{}}, Pieces{
			Texts:        []string{"strategy/skills@en {{missing_fields}}", "strategy/stages/draft@en {{missing_fields}}"},
			AllowedTools: []string{"validate_strategy"}, ToolChoice: "auto", MaxOutputTokens: 2000,
		}},
		{"strategy backtest", phases.Strategy, PromptInput{Locale: "zh", Stage: StageBacktest}, Pieces{
			Texts:        []string{"strategy/skills@zh {{missing_fields}}", "strategy/stages/backtest@zh {{missing_fields}}"},
			AllowedTools: []string{"run_backtest", "validate_strategy"}, ToolChoice: "auto", MaxOutputTokens: 2000,
		}},
		{"strategy confirm has no tools", phases.Strategy, PromptInput{Locale: "zh", Stage: StageConfirm, Artifacts: strategyReady, TurnCount: 3, TurnLimit: 8}, Pieces{
			Texts:      []string{"strategy/skills@zh {{missing_fields}}", "strategy/stages/confirm@zh {{missing_fields}}"},
			ToolChoice: "none", MaxOutputTokens: 2000,
		}},
		{"stage taken from artifacts when not given", phases.StressTest, PromptInput{Locale: "en", Artifacts: Artifacts{"scenario_set_id": "set-1"}}, Pieces{
			Texts:        []string{"stress_test/skills@en {{missing_fields}}", "stress_test/stages/scenario@en {{missing_fields}}"},
			AllowedTools: []string{"run_stress_scenarios", "get_stress_report"}, ToolChoice: "auto", MaxOutputTokens: 2000,
		}},
		{"at the limit is not past it", phases.Deployment, PromptInput{Locale: "en", Stage: StageMonitor, TurnCount: 5, TurnLimit: 5}, Pieces{
			Texts:        []string{"deployment/skills@en {{missing_fields}}", "deployment/stages/monitor@en {{missing_fields}}"},
			AllowedTools: []string{"check_risk_guard", "deploy_strategy", "get_deployment_status"}, ToolChoice: "auto", MaxOutputTokens: 2000,
		}},
		{"past the limit nudges without tools", phases.Deployment, PromptInput{Locale: "en", Stage: StageRollout, TurnCount: 6, TurnLimit: 5}, Pieces{
			Texts:      []string{"deployment/nudge@en {{missing_fields}}"},
			ToolChoice: "none", MaxOutputTokens: 2000, Nudge: true,
		}},
		{"no limit never nudges", phases.StressTest, PromptInput{Locale: "en", Stage: StageFeedback, TurnCount: 99}, Pieces{
			Texts:        []string{"stress_test/skills@en {{missing_fields}}", "stress_test/stages/feedback@en {{missing_fields}}"},
			AllowedTools: []string{"run_stress_scenarios", "get_stress_report"}, ToolChoice: "auto", MaxOutputTokens: 2000,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := handlerFor(t, tc.phase).Prompt(fakeSkills{}, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Prompt (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPromptErrors(t *testing.T) {
	cases := []struct {
		name    string
		skills  fakeSkills
		in      PromptInput
		wantErr error
		wantMsg string
	}{
		{"unknown stage", fakeSkills{}, PromptInput{Stage: "rollout"}, ErrUnknownStage, "strategy/rollout"},
		{"missing stage text", fakeSkills{missing: map[string]bool{"strategy/stages/draft": true}}, PromptInput{Stage: StageDraft}, nil, "no strategy/stages/draft"},
		{"missing phase skills", fakeSkills{missing: map[string]bool{"strategy/skills": true}}, PromptInput{Stage: StageDraft}, nil, "no strategy/skills"},
		{"missing nudge text", fakeSkills{missing: map[string]bool{"strategy/nudge": true}}, PromptInput{Stage: StageDraft, TurnCount: 4, TurnLimit: 3}, nil, "no strategy/nudge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := handlerFor(t, phases.Strategy).Prompt(tc.skills, tc.in)
			if err == nil {
				t.Fatal("Prompt succeeded, want an error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tc.wantMsg)
			}
		})
	}
}

// TestAllowedListsAreFresh guards the handlers' lists against callers that change them.
func TestAllowedListsAreFresh(t *testing.T) {
	r := New()
	for _, p := range []phases.Phase{phases.Strategy, phases.StressTest, phases.Deployment} {
		h, _ := r.For(p)
		h.AllowedGenUI()[0] = "tampered"
		if h.AllowedGenUI()[0] == "tampered" {
			t.Errorf("%s: AllowedGenUI shares its slice", p)
		}
		pieces, err := h.Prompt(fakeSkills{}, PromptInput{Artifacts: Artifacts{}})
		if err != nil {
			t.Fatal(err)
		}
		pieces.AllowedTools[0] = "tampered"
		again, _ := h.Prompt(fakeSkills{}, PromptInput{Artifacts: Artifacts{}})
		if again.AllowedTools[0] == "tampered" {
			t.Errorf("%s: AllowedTools shares its slice", p)
		}
		r.Stages(p)[0] = "tampered"
		if r.Stages(p)[0] == "tampered" {
			t.Errorf("%s: Stages shares its slice", p)
		}
	}
}
