package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/phaseflow/phaseflow/genui"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
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
	h, ok := New(Criteria{}).For(p)
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
	r := New(Criteria{})
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
		calls []store.ToolCall
		want  Report
	}{
		{"strategy: initial", phases.Strategy, Artifacts{"strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false}, nil, Report{
			MissingFields: []string{"strategy_id", "backtest_status", "strategy_status", "advance_to_stress_test"},
			Ask:           []string{"strategy_id", "backtest_status", "strategy_status", "advance_to_stress_test"},
			Reason:        "Strategy phase still needs strategy_id, backtest_status, strategy_status, advance_to_stress_test.",
			Evidence:      map[string]any{"strategy_id": nil, "strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false},
		}},
		{"strategy: confirmed but not asked to advance", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "completed", "advance_to_stress_test": false}, nil, Report{
			MissingFields: []string{"advance_to_stress_test"},
			Ask:           []string{"advance_to_stress_test"},
			Reason:        "Strategy phase still needs advance_to_stress_test.",
			Evidence:      map[string]any{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "completed", "advance_to_stress_test": false},
		}},
		{"strategy: advance asked before confirmation", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "completed", "advance_to_stress_test": true}, nil, Report{
			MissingFields: []string{"strategy_status"},
			Ask:           []string{"strategy_status"},
			Reason:        "Strategy phase still needs strategy_status.",
			Evidence:      map[string]any{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "completed", "advance_to_stress_test": true},
		}},
		{"strategy: backtest failed", phases.Strategy, Artifacts{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "failed", "advance_to_stress_test": true}, []store.ToolCall{{Name: "run_backtest", Status: store.ToolFailure}}, Report{
			MissingFields: []string{"backtest_status"},
			Ask:           []string{"backtest_status"},
			Reason:        "Strategy phase still needs backtest_status.",
			Evidence:      map[string]any{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "failed", "advance_to_stress_test": true},
		}},
		{"strategy: all three hold", phases.Strategy, done, []store.ToolCall{{Name: "run_backtest", Status: store.ToolSuccess}, {Name: "validate_strategy", Status: store.ToolFailure}}, Report{
			Completed: true, NextPhase: phases.StressTest,
			Reason: "Strategy confirmed with a completed backtest, and the move to stress test was requested.", ReasonSkill: "strategy/moves/done",
			Evidence: map[string]any{"strategy_id": "s-1", "strategy_status": "confirmed", "backtest_status": "completed", "advance_to_stress_test": true, "tool_calls": []string{"run_backtest"}},
		}},

		{"stress: pending with nothing", phases.StressTest, Artifacts{"stress_test_decision": "pending"}, nil, Report{
			MissingFields: []string{"scenario_set_id", "stress_report_id", "stress_test_decision"},
			Ask:           []string{"scenario_set_id", "stress_report_id", "stress_test_decision"},
			Reason:        "Stress test phase still needs scenario_set_id, stress_report_id, stress_test_decision.",
			Evidence:      map[string]any{"stress_test_decision": "pending", "scenario_set_id": nil, "stress_report_id": nil},
		}},
		{"stress: report in, decision pending", phases.StressTest, Artifacts{"scenario_set_id": "set-1", "stress_report_id": "r-1", "stress_test_decision": "pending"}, nil, Report{
			MissingFields: []string{"stress_test_decision"},
			Ask:           []string{"stress_test_decision"},
			Reason:        "Stress test phase still needs stress_test_decision.",
			Evidence:      map[string]any{"stress_test_decision": "pending", "scenario_set_id": "set-1", "stress_report_id": "r-1"},
		}},
		{"stress: pass goes to deployment", phases.StressTest, Artifacts{"scenario_set_id": "set-1", "stress_report_id": "r-1", "stress_test_decision": "pass"}, nil, Report{
			Completed: true, NextPhase: phases.Deployment,
			Reason: "Stress test passed; moving to deployment.", ReasonSkill: "stress_test/moves/pass",
			Evidence: map[string]any{"stress_test_decision": "pass", "scenario_set_id": "set-1", "stress_report_id": "r-1"},
		}},
		{"stress: revise goes back to strategy", phases.StressTest, Artifacts{"scenario_set_id": "set-1", "stress_report_id": "r-1", "stress_test_decision": "revise"}, []store.ToolCall{{Name: "get_stress_report", Status: store.ToolSuccess}}, Report{
			Completed: true, NextPhase: phases.Strategy,
			Reason: "Stress test asked for a revision; back to strategy.", ReasonSkill: "stress_test/moves/revise",
			Evidence: map[string]any{"stress_test_decision": "revise", "scenario_set_id": "set-1", "stress_report_id": "r-1", "tool_calls": []string{"get_stress_report"}},
		}},

		{"deployment: initial", phases.Deployment, Artifacts{"deployment_status": "ready", "risk_guard_status": "pending", "rollout_status": "pending"}, nil, Report{
			MissingFields: []string{"deployment_target", "risk_guard_status", "deployment_id", "rollout_status", "deployment_status"},
			Ask:           []string{"deployment_target", "risk_guard_status", "deployment_id", "rollout_status"},
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
			Reason: "Deployment completed; the session is done.", ReasonSkill: "deployment/moves/completed",
			Evidence: map[string]any{"deployment_status": "completed", "deployment_id": "d-1", "deployment_target": "paper", "risk_guard_status": "armed", "rollout_status": "done", "blocker_code": nil},
		}},
		{"deployment: blocked goes back with its code", phases.Deployment, Artifacts{"deployment_target": "live", "risk_guard_status": "failed", "deployment_status": "blocked", "blocker_code": "RISK_GUARD_FAILED"}, []store.ToolCall{{Name: "check_risk_guard", Status: store.ToolSuccess}}, Report{
			Completed: true, NextPhase: phases.Strategy,
			Reason: "Deployment blocked (RISK_GUARD_FAILED); back to strategy.", ReasonSkill: "deployment/moves/blocked",
			Evidence: map[string]any{"deployment_status": "blocked", "deployment_id": nil, "deployment_target": "live", "risk_guard_status": "failed", "rollout_status": nil, "blocker_code": "RISK_GUARD_FAILED", "tool_calls": []string{"check_risk_guard"}},
		}},
		{"deployment: blocked without a code stays", phases.Deployment, Artifacts{"deployment_status": "blocked"}, nil, Report{
			MissingFields: []string{"blocker_code"},
			Ask:           []string{"blocker_code"},
			Reason:        "Deployment blocked without a blocker_code.",
			Evidence:      map[string]any{"deployment_status": "blocked", "deployment_id": nil, "deployment_target": nil, "risk_guard_status": nil, "rollout_status": nil, "blocker_code": nil},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustValid(t, tc.phase, tc.a)
			got := handlerFor(t, tc.phase).PostProcess(PostInput{Artifacts: tc.a, ToolCalls: tc.calls})
			// The verdict only; what a turn records is TestRecords.
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Report{}, "Artifacts", "Strategy", "Summary")); diff != "" {
				t.Errorf("PostProcess (-want +got):\n%s", diff)
			}
			if got.Completed {
				if err := phases.CheckMove(tc.phase, got.NextPhase); err != nil {
					t.Errorf("PostProcess asks for a move the graph refuses: %v", err)
				}
				for _, locale := range skills.Locales {
					if _, err := skills.New().Text(got.ReasonSkill, locale); err != nil {
						t.Errorf("the move's reason skill has no %s text: %v", locale, err)
					}
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
			AllowedTools: []string{"get_deployment_status", "check_risk_guard"}, ToolChoice: "auto", MaxOutputTokens: 2000,
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

// TestStageTools: each stage offers the tools its text tells the model to call, and no
// other: deploy_strategy only in the rollout (after the guard is armed), never while
// preparing or monitoring.
func TestStageTools(t *testing.T) {
	cases := []struct {
		phase phases.Phase
		stage string
		want  []string
	}{
		{phases.Strategy, StageDraft, []string{"validate_strategy"}},
		{phases.Strategy, StageBacktest, []string{"run_backtest", "validate_strategy"}},
		{phases.Strategy, StageConfirm, nil},
		{phases.StressTest, StageBootstrap, []string{"run_stress_scenarios"}},
		{phases.StressTest, StageScenario, []string{"run_stress_scenarios", "get_stress_report"}},
		{phases.StressTest, StageFeedback, []string{"run_stress_scenarios", "get_stress_report"}},
		{phases.Deployment, StagePrepare, []string{"check_risk_guard"}},
		{phases.Deployment, StageRollout, []string{"deploy_strategy", "get_deployment_status"}},
		{phases.Deployment, StageMonitor, []string{"get_deployment_status", "check_risk_guard"}},
	}
	for _, tc := range cases {
		t.Run(string(tc.phase)+"/"+tc.stage, func(t *testing.T) {
			got, err := handlerFor(t, tc.phase).Prompt(fakeSkills{}, PromptInput{Locale: "en", Stage: tc.stage})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.AllowedTools); diff != "" {
				t.Errorf("allowed tools (-want +got):\n%s", diff)
			}
			wantChoice := "auto"
			if tc.want == nil {
				wantChoice = "none"
			}
			if got.ToolChoice != wantChoice {
				t.Errorf("tool_choice = %s, want %s", got.ToolChoice, wantChoice)
			}
		})
	}
}

func TestToolsOf(t *testing.T) {
	all := []string{"validate_strategy", "run_backtest", "run_stress_scenarios", "get_stress_report", "check_risk_guard", "deploy_strategy", "get_deployment_status"}
	cases := []struct {
		label string
		want  []string
	}{
		{"strategy_engine", []string{"validate_strategy", "run_backtest"}},
		{"risk_lab", []string{"run_stress_scenarios", "get_stress_report"}},
		{"deployer", []string{"check_risk_guard", "deploy_strategy", "get_deployment_status"}},
		{"my_own_server", all},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, ToolsOf(tc.label, all)); diff != "" {
			t.Errorf("ToolsOf(%s) (-want +got):\n%s", tc.label, diff)
		}
	}
	if got := ToolsOf("deployer", []string{"validate_strategy"}); got != nil {
		t.Errorf("ToolsOf(deployer, [validate_strategy]) = %v, want none", got)
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
	r := New(Criteria{})
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

func TestRecords(t *testing.T) {
	draft := map[string]any{"name": "BTC momentum", "spec": map[string]any{"lookback": 20.0}}
	validated := store.ToolCall{Name: "validate_strategy", Status: store.ToolSuccess, Output: `{"strategy_id":"s-tool","status":"validated"}`}
	cases := []struct {
		name     string
		a        Artifacts
		calls    []store.ToolCall
		wantID   string // "new" for a fresh id, "" for no record
		wantName string
	}{
		{"nothing drafted, nothing validated", Artifacts{"strategy_status": "draft"}, nil, "", ""},
		{"a draft gets a fresh id", Artifacts{"strategy_draft": draft}, nil, "new", "BTC momentum"},
		{"validate_strategy names the id", Artifacts{"strategy_draft": draft}, []store.ToolCall{validated}, "s-tool", "BTC momentum"},
		{"a failed validation names nothing", Artifacts{"strategy_id": "s-1"}, []store.ToolCall{{Name: "validate_strategy", Status: store.ToolFailure, Output: `{"strategy_id":"s-bad"}`}}, "s-1", ""},
	}
	h := handlerFor(t, phases.Strategy)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, had := tc.a["strategy_id"]
			r := h.PostProcess(PostInput{Artifacts: tc.a, ToolCalls: tc.calls})
			if _, has := tc.a["strategy_id"]; has != had {
				t.Error("PostProcess changed its input block")
			}
			switch {
			case tc.wantID == "" && r.Strategy != nil:
				t.Fatalf("recorded %+v, want nothing", r.Strategy)
			case tc.wantID == "":
				return
			case r.Strategy == nil:
				t.Fatal("nothing recorded")
			case tc.wantID != "new" && r.Strategy.ID != tc.wantID, tc.wantID == "new" && r.Strategy.ID == "":
				t.Fatalf("recorded id %q, want %s", r.Strategy.ID, tc.wantID)
			}
			if r.Strategy.Name != tc.wantName || r.Artifacts["strategy_id"] != r.Strategy.ID {
				t.Errorf("record %+v, block id %v", r.Strategy, r.Artifacts["strategy_id"])
			}
		})
	}
}

func TestConfirm(t *testing.T) {
	r := New(Criteria{})
	backtested := Artifacts{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "completed", "advance_to_stress_test": false}
	cases := []struct {
		name          string
		phase         phases.Phase
		block         Artifacts
		advance       bool
		ok, completed bool
	}{
		{"backtested and advance asked: the phase completes", phases.Strategy, backtested, true, true, true},
		{"backtested without advance: confirmed, stays", phases.Strategy, backtested, false, true, false},
		{"not backtested: confirmed, stays", phases.Strategy, Artifacts{}, true, true, false},
		{"another phase has no confirm step", phases.StressTest, Artifacts{}, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, ok := r.Confirm(tc.phase, tc.block, "s-1", tc.advance)
			if ok != tc.ok || rep.Completed != tc.completed {
				t.Fatalf("Confirm = %+v, %v; want ok %v completed %v", rep, ok, tc.ok, tc.completed)
			}
			if ok && (rep.Artifacts["strategy_status"] != "confirmed" || rep.Artifacts["advance_to_stress_test"] != tc.advance) {
				t.Errorf("block after confirm = %v", rep.Artifacts)
			}
		})
	}
}

func TestEnterKeepsIdsAndTheDraft(t *testing.T) {
	h := handlerFor(t, phases.Strategy)
	got := h.Enter(Artifacts{"strategy_id": "s-1", "strategy_status": "confirmed", "strategy_draft": map[string]any{"name": "x"}, "notes": "n"})
	want := Artifacts{"strategy_id": "s-1", "strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false, "strategy_draft": map[string]any{"name": "x"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Enter (-want +got):\n%s", diff)
	}
}

func TestDeploymentReportsItsState(t *testing.T) {
	a := Artifacts{"deployment_id": "d-1", "deployment_status": "deployed"}
	if got := handlerFor(t, phases.Deployment).PostProcess(PostInput{Artifacts: a}).Summary; !cmp.Equal(got, map[string]any(a)) {
		t.Errorf("Summary = %v, want the deployment block", got)
	}
}

// TestMissingQuestion: the question the server puts on its choice_prompt names every field a
// verdict can report missing in words of the session's locale, never as a bare identifier.
func TestMissingQuestion(t *testing.T) {
	lib := skills.New()
	for _, p := range []phases.Phase{phases.Strategy, phases.StressTest, phases.Deployment} {
		h := handlerFor(t, p)
		for _, locale := range skills.Locales {
			t.Run(string(p)+"/"+locale, func(t *testing.T) {
				var fields []string
				for _, f := range phases.Fields(p) {
					if f.Name != "summary" && f.Name != "notes" && f.Name != "strategy_draft" {
						fields = append(fields, f.Name)
					}
				}
				m, err := h.MissingQuestion(lib, locale, fields)
				if err != nil {
					t.Fatal(err)
				}
				q := m.Text()
				lines := strings.Split(q, "\n")
				if len(lines) != len(fields)+1 || strings.HasPrefix(lines[0], "- ") {
					t.Fatalf("question %q, want a first line and one line per field", q)
				}
				for i, f := range fields {
					if strings.Contains(lines[i+1], f) {
						t.Errorf("%s has no label in %s: %q", f, locale, lines[i+1])
					}
				}
			})
		}
	}
	m, _ := handlerFor(t, phases.Deployment).MissingQuestion(lib, "zh", []string{"deployment_target", "unknown_field"})
	q := m.Text()
	if want := "部署还不能继续，还需要：\n- 在哪里运行（模拟交易或实盘账户）\n- unknown_field"; q != want {
		t.Errorf("MissingQuestion = %q, want %q", q, want)
	}
	if want := []string{"在哪里运行（模拟交易或实盘账户）", "unknown_field"}; !cmp.Equal(m.Labels, want) {
		t.Errorf("labels %q, want %q", m.Labels, want)
	}
}

// TestToolResultsFillTheBlockAndCards: a stress run's and the deployer's results fill the
// fields the model's patch left out (never one it set), and become the cards the phase
// shows; a new draft without a card gets a strategy card. Every card keeps the GenUI schema.
func TestToolResultsFillTheBlockAndCards(t *testing.T) {
	ok := func(name, output string) store.ToolCall {
		return store.ToolCall{Name: name, Status: store.ToolSuccess, Output: output}
	}
	stress := ok("run_stress_scenarios", `{"stress_report_id":"rep-1","scenario_set_id":"scn-1","results":[`+
		`{"scenario":"covid_crash_2020","pnl":-0.14,"max_drawdown":0.19},{"scenario":"flash_crash_1h","pnl":-0.06,"max_drawdown":0.08}],"worst_drawdown":0.19}`)
	guard := ok("check_risk_guard", `{"status":"armed","target":"paper","limits":{"max_position":0.1,"max_daily_loss":0.03}}`)
	deploy := ok("deploy_strategy", `{"deployment_id":"dep-1","target":"paper","status":"deployed"}`)
	tripped := ok("check_risk_guard", `{"status":"tripped","deployment_id":"dep-1","breaches":[{"limit":"max_daily_loss"}]}`)
	draft := map[string]any{"name": "BTC momentum", "spec": map[string]any{"symbol": "BTC-USD"}}
	cases := []struct {
		name   string
		phase  phases.Phase
		block  Artifacts
		patch  map[string]any
		calls  []store.ToolCall
		want   Artifacts // fields the block must hold after the turn
		card   string    // the card type the phase adds, "" for none
		fields map[string]any
	}{
		{"a stress run fills the report id", phases.StressTest, Artifacts{"scenario_set_id": "scn-1", "stress_test_decision": "pending"}, nil,
			[]store.ToolCall{stress}, Artifacts{"stress_report_id": "rep-1"}, "stress_report",
			map[string]any{"stress_report_id": "rep-1", "worst_scenario": "covid_crash_2020", "worst_drawdown": 0.19}},
		{"the model's own id is kept", phases.StressTest, Artifacts{"scenario_set_id": "scn-1", "stress_report_id": "rep-model"},
			map[string]any{"stress_report_id": "rep-model"}, []store.ToolCall{stress}, Artifacts{"stress_report_id": "rep-model"}, "stress_report", nil},
		{"a failed run fills nothing", phases.StressTest, Artifacts{"scenario_set_id": "scn-1"}, nil,
			[]store.ToolCall{{Name: "run_stress_scenarios", Status: store.ToolFailure, Error: "down"}}, Artifacts{"stress_report_id": nil}, "", nil},
		{"an armed guard fills target and guard", phases.Deployment, Artifacts{"deployment_status": "ready", "risk_guard_status": "pending"}, nil,
			[]store.ToolCall{guard}, Artifacts{"deployment_target": "paper", "risk_guard_status": "armed"}, "deployment_summary",
			map[string]any{"target": "paper", "risk_guard_status": "armed"}},
		{"a deployment fills its id and status", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "armed", "deployment_status": "ready"}, nil,
			[]store.ToolCall{deploy}, Artifacts{"deployment_id": "dep-1", "deployment_status": "deployed"}, "deployment_summary",
			map[string]any{"deployment_id": "dep-1", "deployment_status": "deployed"}},
		{"a tripped guard is not a failed one", phases.Deployment, Artifacts{"deployment_target": "paper", "risk_guard_status": "armed", "deployment_id": "dep-1", "deployment_status": "deployed"}, nil,
			[]store.ToolCall{tripped}, Artifacts{"risk_guard_status": "armed"}, "deployment_summary", map[string]any{"breaches": 1.0}},
		{"a new draft gets its card", phases.Strategy, Artifacts{"strategy_status": "draft", "strategy_draft": draft}, map[string]any{"strategy_draft": draft},
			nil, Artifacts{}, "strategy_card", map[string]any{"name": "BTC momentum", "status": "draft"}},
		{"an old draft gets none", phases.Strategy, Artifacts{"strategy_status": "draft", "strategy_draft": draft}, map[string]any{"summary": "x"},
			nil, Artifacts{}, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := handlerFor(t, tc.phase).PostProcess(PostInput{Artifacts: tc.block, ToolCalls: tc.calls, Patch: tc.patch})
			for k, v := range tc.want {
				if r.Artifacts[k] != v {
					t.Errorf("block[%s] = %v, want %v (block %v)", k, r.Artifacts[k], v, r.Artifacts)
				}
			}
			mustValid(t, tc.phase, r.Artifacts)
			if tc.card == "" {
				if len(r.GenUI) != 0 {
					t.Fatalf("cards %s, want none", r.GenUI)
				}
				return
			}
			if len(r.GenUI) != 1 {
				t.Fatalf("cards %s, want one %s", r.GenUI, tc.card)
			}
			if err := genui.Validate(r.GenUI[0]); err != nil {
				t.Fatalf("card %s breaks the schema: %v", r.GenUI[0], err)
			}
			var card map[string]any
			_ = json.Unmarshal(r.GenUI[0], &card)
			if card["type"] != tc.card || card["source"] != "auto" {
				t.Fatalf("card %v, want an auto %s", card, tc.card)
			}
			for k, v := range tc.fields {
				if card[k] != v {
					t.Errorf("card[%s] = %v, want %v", k, card[k], v)
				}
			}
		})
	}
}
