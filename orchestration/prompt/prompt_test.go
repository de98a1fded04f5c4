package prompt

import (
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
)

func TestBuild(t *testing.T) {
	history := []store.Message{{Role: "user", Content: "earlier question"}, {Role: "assistant", Content: "earlier answer"}}
	base := func(locale string) Input {
		return Input{
			Session: &store.Session{Phase: "strategy", Locale: locale},
			History: history, UserText: "now", Stage: "draft",
			Artifacts:  map[string]any{"strategy_status": "draft"},
			PhaseTexts: []string{"Allowed: {{allowed_genui}}"},
			Values:     map[string]string{"allowed_genui": "strategy_card, choice_prompt"},
		}
	}
	cases := []struct {
		name  string
		in    func() Input
		check func(t *testing.T, instructions string, inputs []string, prev string)
	}{
		{"history is resent and placeholders are filled", func() Input { return base("en") },
			func(t *testing.T, ins string, inputs []string, prev string) {
				if len(inputs) != 3 || inputs[2] != "now" || prev != "" {
					t.Fatalf("inputs %q prev %q", inputs, prev)
				}
				if !strings.Contains(ins, "Allowed: strategy_card, choice_prompt") || strings.Contains(ins, "{{") {
					t.Fatalf("placeholders not filled:\n%s", ins)
				}
			}},
		{"the state block names phase, stage, locale and artifacts", func() Input { return base("zh") },
			func(t *testing.T, ins string, _ []string, _ string) {
				for _, want := range []string{"[SESSION STATE]", "phase: strategy", "stage: draft", "locale: zh", `artifacts: {"strategy_status":"draft"}`} {
					if !strings.Contains(ins, want) {
						t.Fatalf("instructions lack %q:\n%s", want, ins)
					}
				}
			}},
		{"chaining sends only the new message", func() Input { in := base("en"); in.PreviousResponseID = "resp_1"; return in },
			func(t *testing.T, _ string, inputs []string, prev string) {
				if len(inputs) != 1 || prev != "resp_1" {
					t.Fatalf("chained request: inputs %q prev %q", inputs, prev)
				}
			}},
		{"carryover goes before the user's text", func() Input { in := base("en"); in.Carryover = "[CARRYOVER]x[/CARRYOVER]"; return in },
			func(t *testing.T, _ string, inputs []string, _ string) {
				if last := inputs[len(inputs)-1]; !strings.HasPrefix(last, "[CARRYOVER]x[/CARRYOVER]") || !strings.HasSuffix(last, "now") {
					t.Fatalf("last input %q", last)
				}
			}},
		{"a retry carries the correction note with the reasons", func() Input { in := base("en"); in.Correction = []string{"malformed_xml at 1:2"}; return in },
			func(t *testing.T, ins string, _ []string, _ string) {
				if !strings.Contains(ins, "- malformed_xml at 1:2") {
					t.Fatalf("no correction note:\n%s", ins)
				}
			}},
	}
	b := New("m", 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := b.Build(skills.New(), tc.in())
			if err != nil {
				t.Fatal(err)
			}
			var inputs []string
			for _, it := range req.Input {
				inputs = append(inputs, it.Content)
			}
			tc.check(t, req.Instructions, inputs, req.PreviousResponseID)
		})
	}
}

func TestCapOutput(t *testing.T) {
	cases := []struct {
		name                  string
		limit, requested, cap int
	}{
		{"the phase's cap", 2000, 0, 2000},
		{"a request lowers it", 2000, 300, 300},
		{"a request never raises it", 2000, 9000, 2000},
		{"no cap but the request's", 0, 500, 500},
		{"no cap at all", 0, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pl := &Plan{}
			pl.capOutput(tc.limit, tc.requested)
			if pl.MaxOutputTokens != tc.cap || pl.input.MaxOutputTokens != tc.cap {
				t.Fatalf("cap %d (request %d), want %d", pl.MaxOutputTokens, pl.input.MaxOutputTokens, tc.cap)
			}
		})
	}
}
