package jsonskill

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/internal/langtest"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/upstream"
)

var update = flag.Bool("update", false, "rewrite the golden prompts in testdata/golden")

func catalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := Load(skills.New().JSON())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTheTwoSkillsLoad(t *testing.T) {
	c := catalog(t)
	var names []string
	for _, sk := range c.List() {
		names = append(names, sk.Name)
		if !cmp.Equal(sk.Locales, []string{"en", "zh"}) || sk.Version == "" || sk.Description == "" {
			t.Errorf("%s: locales %v, version %q, description %q", sk.Name, sk.Locales, sk.Version, sk.Description)
		}
	}
	if !cmp.Equal(names, []string{"post_views", "terminal_state"}) {
		t.Errorf("skills = %v", names)
	}
	if _, err := c.Get("nope"); err == nil {
		t.Error("an unknown skill was found")
	}
}

// The texts of each skill keep, in both locales, the same placeholders, the same
// identifiers (fields, enum values written with an underscore, rule names) and every enum
// literal of the output schema, and no CJK character sits in an English text: the
// translation can change words, not what the model is told to produce.
func TestSkillTextParity(t *testing.T) {
	ident := regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b`)
	for _, sk := range catalog(t).List() {
		enums := enumLiterals(t, sk.OutputSchema)
		for name := range sk.texts["en"] {
			en, zh := sk.texts["en"][name], sk.texts["zh"][name]
			if zh == "" {
				t.Errorf("%s: %s has no zh text", sk.Name, name)
				continue
			}
			if diff := cmp.Diff(placeholders(en), placeholders(zh)); diff != "" {
				t.Errorf("%s/%s: placeholders differ (-en +zh):\n%s", sk.Name, name, diff)
			}
			if diff := cmp.Diff(set(ident.FindAllString(en, -1)), set(ident.FindAllString(zh, -1))); diff != "" {
				t.Errorf("%s/%s: identifiers differ (-en +zh):\n%s", sk.Name, name, diff)
			}
			for _, e := range enums {
				if strings.Contains(en, e) != strings.Contains(zh, e) {
					t.Errorf("%s/%s: enum literal %q in one locale only", sk.Name, name, e)
				}
			}
			if i := strings.IndexFunc(en, isCJK); i >= 0 {
				t.Errorf("%s/%s (en): CJK character at %d: %q", sk.Name, name, i, en[i:min(len(en), i+20)])
			}
		}
	}
}

// The zh texts read as Chinese: names of fields and values aside, no English sentence.
// The post_views template keeps its English header, a trigger the extractor is known by.
func TestSkillChineseHasNoEnglishSentence(t *testing.T) {
	for _, sk := range catalog(t).List() {
		for name, text := range sk.texts["zh"] {
			text = strings.ReplaceAll(text, "[InvestPulse Extraction Prompt v1]", "")
			if runs := langtest.EnglishRuns(text); len(runs) > 0 {
				t.Errorf("%s/%s (zh): English prose %q", sk.Name, name, runs)
			}
		}
	}
}

// Every placeholder of a user template is one the runner fills.
func TestEveryPlaceholderIsFilled(t *testing.T) {
	for _, sk := range catalog(t).List() {
		known := map[string]bool{}
		for name, typ := range sk.inputTypes {
			if typ == "string" {
				known[name] = true
			} else {
				known[name+"_block"] = true
			}
		}
		for _, locale := range sk.Locales {
			for _, p := range placeholders(sk.text("user", locale)) {
				if !known[p] {
					t.Errorf("%s (%s): {{%s}} is filled by nothing", sk.Name, locale, p)
				}
			}
		}
	}
}

// enumLiterals lists the string values of every enum in a schema.
func enumLiterals(t *testing.T, schema json.RawMessage) []string {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch n := v.(type) {
		case map[string]any:
			if list, ok := n["enum"].([]any); ok {
				for _, e := range list {
					if s, ok := e.(string); ok {
						out = append(out, s)
					}
				}
			}
			for _, c := range n {
				walk(c)
			}
		case []any:
			for _, c := range n {
				walk(c)
			}
		}
	}
	walk(doc)
	return set(out)
}

func set(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	return slices.Compact(s)
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}

// Strict mode wants every object to require all its properties and allow no other, and
// takes no if/then; the skill's own schema keeps its conditions for Phaseflow's check.
func TestTheStrictSchemaIsWhatStrictModeTakes(t *testing.T) {
	for _, sk := range catalog(t).List() {
		var doc any
		if err := json.Unmarshal(sk.strict, &doc); err != nil {
			t.Fatal(err)
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			n, ok := v.(map[string]any)
			if !ok {
				return
			}
			for _, k := range strictUnsupported() {
				if _, ok := n[k]; ok {
					t.Errorf("%s %s: keyword %q left in", sk.Name, path, k)
				}
			}
			if props, ok := n["properties"].(map[string]any); ok {
				req, _ := n["required"].([]any)
				if len(req) != len(props) || n["additionalProperties"] != false {
					t.Errorf("%s %s: required %v of %d properties, additionalProperties %v", sk.Name, path, req, len(props), n["additionalProperties"])
				}
				for k, p := range props {
					walk(path+"/"+k, p)
				}
			}
			if defs, ok := n["$defs"].(map[string]any); ok {
				for k, d := range defs {
					walk(path+"/$defs/"+k, d)
				}
			}
			walk(path+"/items", n["items"])
		}
		walk("", doc)
		if !strings.Contains(string(sk.OutputSchema), `"if"`) && sk.Name == "terminal_state" {
			t.Error("terminal_state's own schema lost its has_question condition")
		}
	}
}

func TestCheckInput(t *testing.T) {
	c := catalog(t)
	ts, _ := c.Get("terminal_state")
	pv, _ := c.Get("post_views")
	cases := []struct {
		name  string
		sk    *Skill
		input string
		want  string // a problem's start, "" for a good input
		large bool
	}{
		{"good", ts, `{"terminal":"❯","agent":"codex"}`, "", false},
		{"missing field", ts, `{"agent":"codex"}`, "/: missing property 'terminal'", false},
		{"mistyped field", ts, `{"terminal":3}`, "/terminal: got number, want string", false},
		{"unknown field", ts, `{"terminal":"x","colour":true}`, "/: additional properties 'colour' not allowed", false},
		{"not an object", ts, `"hi"`, "/: got string, want object", false},
		{"no input", ts, ``, "/: got null, want object", false},
		{"snapshot over 1 MiB", ts, `{"terminal":"` + strings.Repeat("x", 1<<20+1) + `"}`, "/terminal: the snapshot is", true},
		{"post without content", pv, `{"platform":"x"}`, "/: missing property 'content_text'", false},
		{"a bad market", pv, `{"content_text":"x","assets":[{"symbol":"BTC","market":"moon"}]}`, "/assets/0/market: value must be one of", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.sk.CheckInput(json.RawMessage(tc.input))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			isInput, large := IsInputError(err)
			if !isInput || large != tc.large || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v (too large %v), want %q (too large %v)", err, large, tc.want, tc.large)
			}
		})
	}
}

func TestReadAnswer(t *testing.T) {
	cases := []struct {
		name, text string
		want       string
		repaired   bool
		err        error
	}{
		{"bare", `{"a":1}`, `{"a":1}`, false, nil},
		{"spaces", "  {\"a\":1}\n", `{"a":1}`, false, nil},
		{"fenced", "```json\n{\"a\":1}\n```", `{"a":1}`, true, nil},
		{"prose around a fence", "Here it is:\n```json\n{\"a\":1}\n```\nDone.", `{"a":1}`, true, nil},
		{"braces in strings", `{"a":"}{\"}"} and more`, `{"a":"}{\"}"}`, true, nil},
		{"the first of two", `{"a":1}{"b":2}`, `{"a":1}`, true, nil},
		{"nested", `x {"a":{"b":[{"c":1}]}} y`, `{"a":{"b":[{"c":1}]}}`, true, nil},
		{"none", "I cannot help with that.", "", false, errNoObject},
		{"cut short", `{"a":{"b":1}`, "", false, errIncomplete},
		{"too large", strings.Repeat(" ", maxAnswerBytes+1), "", false, errTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, _, repaired, err := readAnswer(tc.text)
			if tc.err != nil {
				if err != tc.err {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || string(obj) != tc.want || repaired != tc.repaired {
				t.Errorf("readAnswer = %s, %v, %v; want %s, %v", obj, repaired, err, tc.want, tc.repaired)
			}
		})
	}
	if _, _, _, err := readAnswer(`{"a": }`); err == nil {
		t.Error("a balanced but invalid object was taken")
	}
}

func FuzzReadAnswer(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{}\n```", `x{"a":"}"}y`, `{{{{`, `"\\"`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		obj, _, _, err := readAnswer(text)
		if err == nil && !json.Valid(obj) {
			t.Fatalf("readAnswer(%q) took %q, which is not JSON", text, obj)
		}
		if err == nil && !strings.Contains(text, string(obj)) {
			t.Fatalf("readAnswer(%q) took %q, which the answer does not hold", text, obj)
		}
	})
}

// Seed 000 §D1, its thresholds at both sides.
func TestReasoningLanguage(t *testing.T) {
	cases := []struct {
		reasoning any
		want      string
	}{
		{nil, langZH}, {"", langZH}, {42, langZH},
		{"看多比特币", langZH},
		{"BTC 看多 because the ETF flows keep rising every week now", langZH},   // 2 CJK
		{"one two three four five", langZH},                                   // 5 words
		{"one two three four five six", langNonZH},                            // 0 CJK, 6 words
		{"好 one two three four five six seven eight nine ten eleven", langZH}, // 1 CJK, 11 words
		{"好 one two three four five six seven eight nine ten eleven twelve", langNonZH},
		{"it's isn't they're fine ok", langZH}, // 5 words with their 's
	}
	for _, tc := range cases {
		if got := reasoningLanguage(tc.reasoning); got != tc.want {
			t.Errorf("reasoningLanguage(%q) = %s, want %s", tc.reasoning, got, tc.want)
		}
	}
}

// The busy answer the rules give matches the skill's own output schema.
func TestTheRulesAnswerMatchesTheSchema(t *testing.T) {
	ts, _ := catalog(t).Get("terminal_state")
	out := (&execution{sk: ts}).busyAnswer("✶ Brewing…")
	problems, err := validate(ts.output, out.output, "/")
	if err != nil || len(problems) > 0 {
		t.Errorf("rules answer %s: %v %v", out.output, problems, err)
	}
}

// golden renders, for each skill, locale and output mode, the first request and its
// correction retry as the upstream received them.
func TestGoldenPrompts(t *testing.T) {
	inputs := map[string]map[string]any{
		"terminal_state": {"terminal": "[[fault:json_invalid_once]]\n" + question, "agent": "claude_code"},
		"post_views": {"content_text": "$BTC breakout [[fault:english_reasoning_once]]", "platform": "x", "author_handle": "@trader",
			"url": "https://x.com/trader/status/1", "posted_at": "2026-11-30", "lang": "en",
			"assets": []any{map[string]any{"symbol": "BTC", "name": "Bitcoin", "market": "CRYPTO"}}, "aliases": map[string]any{"bitcoin": "BTC"}},
	}
	for _, sk := range catalog(t).List() {
		for _, locale := range sk.Locales {
			for _, mode := range []string{upstream.JSONModeTextJSON, upstream.JSONModeStructured} {
				name := sk.Name + "/" + locale + "-" + mode + ".txt"
				t.Run(name, func(t *testing.T) {
					g := newRig(t, "responses", mode, Options{})
					g.run(t, sk.Name, locale, inputs[sk.Name])
					var b strings.Builder
					for i, r := range g.scripts.Requests() {
						var body struct {
							Instructions string
							Input        []upstream.InputItem
						}
						if err := json.Unmarshal(r.Body, &body); err != nil {
							t.Fatal(err)
						}
						b.WriteString([]string{"== first call", "== correction retry"}[min(i, 1)] + "\n-- system\n" + body.Instructions + "\n-- user\n" + body.Input[0].Content + "\n")
					}
					compareGolden(t, filepath.Join("testdata", "golden", name), b.String())
				})
			}
		}
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./jsonskill -run TestGoldenPrompts -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-golden +rendered):\n%s", path, diff)
	}
}
