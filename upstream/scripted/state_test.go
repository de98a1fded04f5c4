package scripted

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stateBlock returns instructions holding a [SESSION STATE] block.
func stateBlock(phase, stage, locale, artifacts string) string {
	return "Follow the output contract.\n\n[SESSION STATE]\nphase: " + phase + "\nstage: " + stage +
		"\nlocale: " + locale + "\nartifacts: " + artifacts + "\n[/SESSION STATE]\n"
}

func TestChooseScenario(t *testing.T) {
	tests := []struct {
		name         string
		instructions string
		marker       string
		want         string
	}{
		{name: "no block plays the default reply", instructions: "You are a helpful assistant.", want: defaultScenario},
		{name: "strategy draft", instructions: stateBlock("strategy", "draft", "en", `{"strategy_status":"draft"}`), want: "strategy_draft"},
		{name: "strategy backtest", instructions: stateBlock("strategy", "backtest", "en", `{}`), want: "strategy_backtest"},
		{name: "strategy confirm", instructions: stateBlock("strategy", "confirm", "zh", `{}`), want: "strategy_confirm"},
		{name: "stress bootstrap", instructions: stateBlock("stress_test", "bootstrap", "en", `{}`), want: "stress_bootstrap"},
		{name: "stress scenario", instructions: stateBlock("stress_test", "scenario", "en", `{}`), want: "stress_scenario"},
		{name: "stress feedback passes", instructions: stateBlock("stress_test", "feedback", "zh", `{}`), want: "stress_feedback_pass"},
		{name: "deploy prepare", instructions: stateBlock("deployment", "prepare", "en", `{}`), want: "deploy_prepare"},
		{name: "deploy rollout", instructions: stateBlock("deployment", "rollout", "en", `{}`), want: "deploy_rollout"},
		{name: "deploy monitor completes", instructions: stateBlock("deployment", "monitor", "en", `{}`), want: "deploy_monitor_completed"},
		{name: "unknown stage plays the phase's first", instructions: stateBlock("deployment", "celebrate", "en", `{}`), want: "deploy_prepare"},
		{name: "missing stage plays the phase's first", instructions: "[SESSION STATE]\nphase: stress_test\n[/SESSION STATE]", want: "stress_bootstrap"},
		{name: "finished session plays the default reply", instructions: stateBlock("completed", "", "en", `{}`), want: defaultScenario},
		{name: "marker wins over the block", instructions: stateBlock("strategy", "draft", "en", `{}`), marker: "deploy_monitor_blocked", want: "deploy_monitor_blocked"},
		{name: "marker without a block", instructions: "", marker: "bad_patch", want: "bad_patch"},
		{name: "unknown marker falls back to the block", instructions: stateBlock("strategy", "backtest", "en", `{}`), marker: "no_such_scenario", want: "strategy_backtest"},
		{name: "unknown marker without a block", marker: "no_such_scenario", want: defaultScenario},
		{name: "last block wins", instructions: stateBlock("strategy", "draft", "en", `{}`) + stateBlock("deployment", "rollout", "en", `{}`), want: "deploy_rollout"},
		{name: "unclosed block, padded keys", instructions: "[SESSION STATE]\n  Phase :  stress_test \r\n stage:scenario\r\n", want: "stress_scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, ok := parseSessionState(tt.instructions)
			if got := chooseScenario(tt.marker, st, ok); got != tt.want {
				t.Errorf("chooseScenario = %q, want %q (state %+v, found %v)", got, tt.want, st, ok)
			}
		})
	}
}

func TestParseSessionState(t *testing.T) {
	in := stateBlock("deployment", "monitor", "zh", `{"deployment_id":"dep-42","risk_guard_status":"armed"}`)
	st, ok := parseSessionState(in)
	want := sessionState{phase: "deployment", stage: "monitor", locale: "zh",
		artifacts: map[string]any{"deployment_id": "dep-42", "risk_guard_status": "armed"}}
	if !ok || !cmp.Equal(st, want, cmp.AllowUnexported(sessionState{})) {
		t.Errorf("parseSessionState = %+v, %v; want %+v", st, ok, want)
	}
	if st, ok := parseSessionState(stateBlock("strategy", "draft", "en", `{not json`)); !ok || st.artifacts != nil || st.stage != "draft" {
		t.Errorf("a malformed artifacts line: %+v, %v", st, ok)
	}
}

func TestNewVars(t *testing.T) {
	tests := []struct {
		name      string
		artifacts map[string]any
		text      string
		want      *regexp.Regexp
	}{
		{name: "fresh ids", text: "{uuid} {id} {scenario_set_id} {stress_report_id} {deployment_id}",
			want: regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12} ([0-9a-f]{12}) scn-([0-9a-f]{12}) rep-([0-9a-f]{12}) dep-([0-9a-f]{12})$`)},
		{name: "artifact ids", artifacts: map[string]any{"scenario_set_id": "scn-7", "stress_report_id": "rep-8", "deployment_id": "dep-9"},
			text: "{scenario_set_id} {stress_report_id} {deployment_id}", want: regexp.MustCompile(`^scn-7 rep-8 dep-9$`)},
		{name: "unsafe artifact ignored", artifacts: map[string]any{"deployment_id": `dep"><b>`, "scenario_set_id": 7.0},
			text: "{deployment_id} {scenario_set_id}", want: regexp.MustCompile(`^dep-[0-9a-f]{12} scn-[0-9a-f]{12}$`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newVars(tt.artifacts).Replace(tt.text)
			m := tt.want.FindStringSubmatch(got)
			if m == nil {
				t.Fatalf("got %q, want %v", got, tt.want)
			}
			for _, id := range m[min(2, len(m)):] { // every fresh id is the reply's one {id}
				if id != m[1] {
					t.Errorf("ids differ within one reply: %q", got)
				}
			}
		})
	}
}

// allowedGenUI returns the GenUI types each phase allows.
func allowedGenUI() map[string][]string {
	return map[string][]string{
		"strategy":    {"strategy_card", "metric_table", "choice_prompt"},
		"stress_test": {"scenario_table", "stress_report"},
		"deployment":  {"deployment_summary", "rollout_status"},
	}
}

// artifactFields returns the artifact fields of each phase (docs/turn.md).
func artifactFields() map[string][]string {
	return map[string][]string{
		"strategy":    {"strategy_id", "strategy_status", "backtest_status", "advance_to_stress_test", "strategy_draft", "summary"},
		"stress_test": {"scenario_set_id", "stress_report_id", "stress_test_decision", "summary"},
		"deployment":  {"deployment_target", "risk_guard_status", "rollout_status", "deployment_id", "deployment_status", "blocker_code", "summary"},
	}
}

// artifactEnums returns the values the enumerated artifact fields may take.
func artifactEnums() map[string][]string {
	return map[string][]string{
		"strategy_status":      {"draft", "validated", "confirmed"},
		"backtest_status":      {"none", "running", "completed", "failed"},
		"stress_test_decision": {"pending", "pass", "revise"},
		"risk_guard_status":    {"pending", "armed", "failed"},
		"rollout_status":       {"pending", "rolling", "done"},
		"deployment_status":    {"ready", "deployed", "completed", "blocked"},
	}
}

func TestScenarioTable(t *testing.T) {
	table := scenarios()
	for _, d := range stageDefaults() {
		if sc, ok := table[d.scenario]; !ok || sc.phase != d.phase {
			t.Errorf("default %s/%s: scenario %q missing or of phase %q", d.phase, d.stage, d.scenario, sc.phase)
		}
	}
	for name, sc := range table {
		t.Run(name, func(t *testing.T) {
			if len(sc.replies) != 2 {
				t.Errorf("replies in %d languages, want en and zh", len(sc.replies))
			}
			for _, c := range sc.calls {
				checkCall(t, c)
			}
			for lang, r := range sc.replies {
				checkGenUI(t, name, sc.phase, r.with(newVars(nil)).ui)
				checkPatch(t, name, sc.phase, lang, r.with(newVars(nil)).patch)
			}
		})
	}
}

// checkCall checks that a call's tool is listed by its server and its texts are JSON.
func checkCall(t *testing.T, c toolCall) {
	t.Helper()
	if !slices.ContainsFunc(toolCatalog()[c.server], func(d toolDef) bool { return d.name == c.name }) {
		t.Errorf("%s/%s is not in the tool catalog", c.server, c.name)
	}
	c = withVars([]toolCall{c}, newVars(nil))[0]
	if !json.Valid([]byte(c.arguments)) || (c.failure == "" && !json.Valid([]byte(c.output))) {
		t.Errorf("%s: arguments or output not JSON: %s / %s", c.name, c.arguments, c.output)
	}
}

// checkGenUI checks that ui is empty or a JSON array of objects of the phase's types.
func checkGenUI(t *testing.T, name, phase, ui string) {
	t.Helper()
	if ui == "" {
		return
	}
	var objs []struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(ui), &objs); err != nil || len(objs) == 0 {
		t.Fatalf("GenUI is not a JSON array of objects: %v\n%s", err, ui)
	}
	for _, o := range objs {
		if allowed := slices.Contains(allowedGenUI()[phase], o.Type); allowed == (name == "genui_not_allowed") {
			t.Errorf("GenUI type %q in phase %s: allowed = %v", o.Type, phase, allowed)
		}
	}
}

// checkPatch checks that patch is empty or a JSON object of the phase's fields with known
// values; only bad_patch may break the rule. A summary is in the reply's language.
func checkPatch(t *testing.T, name, phase string, lang language, patch string) {
	t.Helper()
	if patch == "" {
		return
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(patch), &obj); err != nil {
		t.Fatalf("patch is not a JSON object: %v\n%s", err, patch)
	}
	bad := false
	for k, v := range obj {
		if !slices.Contains(artifactFields()[phase], k) {
			t.Errorf("patch field %q is not an artifact of %s", k, phase)
		}
		if enum, ok := artifactEnums()[k]; ok && !slices.Contains(enum, v.(string)) {
			bad = true
		}
	}
	if bad != (name == "bad_patch") {
		t.Errorf("patch has a value outside its enum: %v, want %v\n%s", bad, name == "bad_patch", patch)
	}
	if s, ok := obj["summary"].(string); ok && hasCJK(s) != (lang == chinese) {
		t.Errorf("summary not in %s: %q", lang, s)
	}
	if strings.Contains(patch, "{") && strings.Contains(patch, "_id}") {
		t.Errorf("placeholder left in the patch: %s", patch)
	}
}
