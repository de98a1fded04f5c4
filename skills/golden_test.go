package skills_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/skills"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the current skills")

// render is one golden case: a phase, a stage and a locale, with the handler's prompt input.
type render struct {
	phase  phases.Phase
	stage  string // "nudge" for the nudge
	locale string
	in     handlers.PromptInput
}

// artifactsFor gives, per phase and stage, a block that puts the phase in that stage, so the
// golden files also record which state leads to which text.
func artifactsFor(p phases.Phase, stage string) handlers.Artifacts {
	switch string(p) + "/" + stage {
	case "strategy/draft":
		return handlers.Artifacts{"strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false}
	case "strategy/backtest":
		return handlers.Artifacts{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "none", "advance_to_stress_test": false}
	case "strategy/confirm":
		return handlers.Artifacts{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "completed", "advance_to_stress_test": false}
	case "stress_test/bootstrap":
		return handlers.Artifacts{"stress_test_decision": "pending"}
	case "stress_test/scenario":
		return handlers.Artifacts{"scenario_set_id": "set-1", "stress_test_decision": "pending"}
	case "stress_test/feedback":
		return handlers.Artifacts{"scenario_set_id": "set-1", "stress_report_id": "r-1", "stress_test_decision": "pending"}
	case "deployment/prepare":
		return handlers.Artifacts{"deployment_status": "ready", "risk_guard_status": "pending", "rollout_status": "pending"}
	case "deployment/rollout":
		return handlers.Artifacts{"deployment_target": "paper", "deployment_status": "ready", "risk_guard_status": "armed", "rollout_status": "pending"}
	case "deployment/monitor":
		return handlers.Artifacts{"deployment_target": "paper", "deployment_id": "d-1", "deployment_status": "deployed", "risk_guard_status": "armed", "rollout_status": "done"}
	}
	return nil
}

// renders lists every phase × stage × locale, and each phase's nudge per locale.
func renders(t *testing.T) []render {
	r := handlers.New(handlers.Criteria{})
	var out []render
	for _, locale := range skills.Locales {
		for _, p := range []phases.Phase{phases.Strategy, phases.StressTest, phases.Deployment} {
			for _, stage := range r.Stages(p) {
				a := artifactsFor(p, stage)
				if a == nil {
					t.Fatalf("no golden artifacts for %s/%s", p, stage)
				}
				out = append(out, render{p, stage, locale, handlers.PromptInput{
					Locale: locale, Stage: stage, Artifacts: a, TurnCount: 1, TurnLimit: 12,
				}})
			}
			first := r.Stages(p)[0]
			out = append(out, render{p, "nudge", locale, handlers.PromptInput{
				Locale: locale, Stage: first, Artifacts: artifactsFor(p, first), TurnCount: 13, TurnLimit: 12,
			}})
		}
	}
	return out
}

func (c render) path() string {
	return filepath.Join("testdata", "golden", c.locale, string(c.phase), c.stage+".md")
}

// format writes the pieces as a reviewer reads them: the runtime policy, then each text
// under a rule naming its position.
func format(c render, p handlers.Pieces) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- phase: %s, stage: %s, locale: %s -->\n", c.phase, c.stage, c.locale)
	fmt.Fprintf(&b, "<!-- allowed_tools: [%s], tool_choice: %s, max_output_tokens: %d, nudge: %t -->\n",
		strings.Join(p.AllowedTools, ", "), p.ToolChoice, p.MaxOutputTokens, p.Nudge)
	for i, text := range p.Texts {
		fmt.Fprintf(&b, "\n<!-- text %d of %d -->\n%s", i+1, len(p.Texts), text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	lib, reg := skills.New(), handlers.New(handlers.Criteria{})
	for _, c := range renders(t) {
		t.Run(strings.TrimPrefix(c.path(), "testdata/golden/"), func(t *testing.T) {
			h, _ := reg.For(c.phase)
			if c.stage != "nudge" && h.Stage(c.in.Artifacts) != c.stage {
				t.Fatalf("golden artifacts lead to stage %q, not %q", h.Stage(c.in.Artifacts), c.stage)
			}
			pieces, err := h.Prompt(lib, c.in)
			if err != nil {
				t.Fatal(err)
			}
			got := format(c, pieces)
			if *update {
				writeGolden(t, c.path(), got)
				return
			}
			want, err := os.ReadFile(c.path())
			if err != nil {
				t.Fatalf("%v (run go test ./skills -run TestGolden -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("prompt pieces changed (-golden +now); rerun with -update if intended:\n%s", diff)
			}
		})
	}
}

func writeGolden(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStageTextsNameTheirTools: a tool the stage allows is useless if its text never tells
// the model when to call it; a stage without tools must say not to call any.
func TestStageTextsNameTheirTools(t *testing.T) {
	lib, reg := skills.New(), handlers.New(handlers.Criteria{})
	for _, c := range renders(t) {
		if c.locale != "en" {
			continue // the parity test carries the same backticked names to zh
		}
		h, _ := reg.For(c.phase)
		pieces, err := h.Prompt(lib, c.in)
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(pieces.Texts, "\n")
		for _, tool := range pieces.AllowedTools {
			if !strings.Contains(joined, "`"+tool+"`") {
				t.Errorf("%s/%s: allowed tool %s is never named", c.phase, c.stage, tool)
			}
		}
		if len(pieces.AllowedTools) == 0 && !strings.Contains(strings.ToLower(joined), "not call") {
			t.Errorf("%s/%s: no tools allowed, but the text does not say so", c.phase, c.stage)
		}
	}
}
