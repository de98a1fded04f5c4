package skills_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/internal/langtest"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/skills"
)

func names(t *testing.T, lib skills.Library, locale string) []string {
	t.Helper()
	n, err := lib.Names(locale)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func text(t *testing.T, lib skills.Library, name, locale string) string {
	t.Helper()
	s, err := lib.Text(name, locale)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLocalesHaveTheSameFiles(t *testing.T) {
	lib := skills.New()
	if diff := cmp.Diff(names(t, lib, "en"), names(t, lib, "zh")); diff != "" {
		t.Errorf("skill files differ between locales (-en +zh):\n%s", diff)
	}
}

func TestParity(t *testing.T) {
	lib := skills.New()
	for _, name := range names(t, lib, "en") {
		t.Run(name, func(t *testing.T) {
			en, zh := skills.LiteralsOf(text(t, lib, name, "en")), skills.LiteralsOf(text(t, lib, name, "zh"))
			if diff := cmp.Diff(en, zh); diff != "" {
				t.Errorf("literal triggers differ (-en +zh):\n%s", diff)
			}
		})
	}
}

// TestEmbeddedTextsPassTheVersionCheck: every embedded text is a version an admin could
// store (CheckVersion: no CJK in en, Chinese and no English sentence in zh), so the check
// refuses only what the project's own texts never do.
func TestEmbeddedTextsPassTheVersionCheck(t *testing.T) {
	lib := skills.New()
	for _, locale := range skills.Locales {
		for _, name := range names(t, lib, locale) {
			if problems := lib.CheckVersion(name, locale, text(t, lib, name, locale)); len(problems) > 0 {
				t.Errorf("%s (%s): %v", name, locale, problems)
			}
		}
	}
}

func TestCheckVersion(t *testing.T) {
	lib := skills.New()
	contract := text(t, lib, "contract", "en")
	zhContract := text(t, lib, "contract", "zh")
	nudge := text(t, lib, "strategy/nudge", "en")
	cases := []struct {
		name, skill, locale, body string
		want                      string // a problem naming this; "" for none
	}{
		{"the embedded text itself", "contract", "en", contract, ""},
		{"an unknown name", "contracts", "en", contract, `no skill "contracts"`},
		{"CJK in an en text", "contract", "en", contract + "\n请用中文回答。", "CJK characters in an en text"},
		{"English in a zh text", "contract", "zh", zhContract + "\nPlease always answer in English from now on.", "English prose in a zh text"},
		{"a zh text with no Chinese", "contract", "zh", contract, "no Chinese in a zh text"},
		{"a nudge without its placeholders", "strategy/nudge", "en", strings.NewReplacer("{{turn_limit}}", "ten", "{{missing_fields}}", "the rest").Replace(nudge), "placeholders"},
		{"a contract without ThinkingML", "contract", "en", "Answer briefly and kindly.", "missing the tag <final>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			problems := strings.Join(lib.CheckVersion(tc.skill, tc.locale, tc.body), "; ")
			if tc.want == "" && problems != "" || !strings.Contains(problems, tc.want) {
				t.Fatalf("CheckVersion = %q, want a problem naming %q", problems, tc.want)
			}
		})
	}
}

// phaseTexts are the skills this package's handlers read: the tool rules and every text
// under a phase folder.
func phaseTexts(t *testing.T, lib skills.Library) []string {
	var out []string
	for _, n := range names(t, lib, "en") {
		if n == "tools" || strings.HasPrefix(n, "strategy/") || strings.HasPrefix(n, "stress_test/") ||
			strings.HasPrefix(n, "deployment/") {
			out = append(out, n)
		}
	}
	return out
}

// TestPhaseTextsUseKnownPlaceholders: the handlers fill only these three; anything else
// would reach the model as literal braces. A move's reason (<phase>/moves/…) is filled from
// the phase's block instead, so it may name the phase's fields.
func TestPhaseTextsUseKnownPlaceholders(t *testing.T) {
	lib := skills.New()
	known := []string{"{{allowed_genui}}", "{{missing_fields}}", "{{turn_limit}}"}
	for _, name := range phaseTexts(t, lib) {
		allowed := known
		if phase, _, _ := strings.Cut(name, "/"); strings.Contains(name, "/moves/") {
			allowed = nil
			for _, f := range phases.Fields(phases.Phase(phase)) {
				allowed = append(allowed, "{{"+f.Name+"}}")
			}
		}
		for _, ph := range skills.LiteralsOf(text(t, lib, name, "en")).Placeholders {
			if !slices.Contains(allowed, ph) {
				t.Errorf("%s: unknown placeholder %s", name, ph)
			}
		}
	}
}

// vocabulary is every lower-case identifier a phase text may show in backticks: the artifact
// fields, the tools and the GenUI types of every phase.
func vocabulary(t *testing.T) map[string]bool {
	r, v := handlers.New(handlers.Criteria{}), map[string]bool{}
	for _, p := range []phases.Phase{phases.Strategy, phases.StressTest, phases.Deployment} {
		for _, f := range phases.Fields(p) {
			v[f.Name] = true
		}
		h, _ := r.For(p)
		for _, g := range h.AllowedGenUI() {
			v[g] = true
		}
		for _, stage := range r.Stages(p) {
			pieces, err := h.Prompt(skills.New(), handlers.PromptInput{Locale: "en", Stage: stage})
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range pieces.AllowedTools {
				v[tool] = true
			}
		}
	}
	return v
}

// TestPhaseTextsNameKnownKeys catches a misspelt field, tool or GenUI type: a backticked
// snake_case identifier in a phase text must be one the system knows.
func TestPhaseTextsNameKnownKeys(t *testing.T) {
	lib, vocab := skills.New(), vocabulary(t)
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$`)
	for _, name := range phaseTexts(t, lib) {
		for _, c := range skills.LiteralsOf(text(t, lib, name, "en")).Code {
			if snake.MatchString(c) && !vocab[c] {
				t.Errorf("%s: `%s` is not an artifact field, tool or GenUI type", name, c)
			}
		}
	}
}

// TestPhaseTextsAreShort keeps every prompt piece reviewable and cheap in tokens.
func TestPhaseTextsAreShort(t *testing.T) {
	lib := skills.New()
	for _, name := range phaseTexts(t, lib) {
		for _, locale := range skills.Locales {
			if n := strings.Count(text(t, lib, name, locale), "\n"); n > 40 {
				t.Errorf("%s (%s): %d lines, want at most 40", name, locale, n)
			}
		}
	}
}

func TestTriggers(t *testing.T) {
	cases := []struct {
		name string
		text string
		want skills.Literals
	}{
		{"code spans, not fenced blocks", "Set `strategy_id`.\n```\n`ignored` <final>\n```\n", skills.Literals{
			Code: []string{"strategy_id"}, Tags: []string{"<final>"}, Idents: []string{"strategy_id"},
		}},
		{"tags with attributes and closing tags", `<phase id="1"> a < b </phase> <<ParsingError>>`, skills.Literals{
			Tags: []string{"</phase>", "<ParsingError>", `<phase id="1">`},
		}},
		{"identifiers outside backticks", "call run_backtest, then RISK_GUARD_FAILED; 中文run_backtest", skills.Literals{
			Idents: []string{"RISK_GUARD_FAILED", "run_backtest"},
		}},
		{"placeholders keep their count", "{{turn_limit}} and {{turn_limit}} {{ x }}", skills.Literals{
			Placeholders: []string{"{{ x }}", "{{turn_limit}}", "{{turn_limit}}"},
			Idents:       []string{"turn_limit"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, skills.LiteralsOf(tc.text)); diff != "" {
				t.Errorf("triggers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChineseHasNoEnglishSentence: a zh text may name tools, fields, tags and tickers, but
// an English sentence in it is an untranslated piece the model would read in a zh session.
func TestChineseHasNoEnglishSentence(t *testing.T) {
	lib := skills.New()
	for _, name := range names(t, lib, "zh") {
		if runs := langtest.EnglishRuns(text(t, lib, name, "zh")); len(runs) > 0 {
			t.Errorf("%s (zh): English prose %q", name, runs)
		}
	}
}

// TestEveryProblemIsExplained: the correction note names each problem of a refused reply by
// its code with an explanation from problems/<code>, so every code the judge can report
// (every validation error, and reply_language) needs one in every locale.
func TestEveryProblemIsExplained(t *testing.T) {
	lib := skills.New()
	codes := append(thinkingml.ErrorCodes(), postprocess.CodeReplyLanguage)
	for _, locale := range skills.Locales {
		for _, code := range codes {
			body, err := lib.Text("problems/"+string(code), locale)
			if err != nil || strings.TrimSpace(body) == "" {
				t.Errorf("problems/%s (%s): %v", code, locale, err)
			}
		}
	}
}
