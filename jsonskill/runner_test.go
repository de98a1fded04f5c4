package jsonskill

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/upstream/router"
	"github.com/phaseflow/phaseflow/upstream/scripted"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memRuns keeps runs in memory; the store's own tests hold SaveSkillRun to its rules.
type memRuns struct {
	mu   sync.Mutex
	runs []*store.SkillRun
}

func (m *memRuns) SaveSkillRun(_ context.Context, run *store.SkillRun, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	run.ID = fmt.Sprintf("run-%d", len(m.runs)+1)
	m.runs = append(m.runs, run)
	return nil
}

// rig is a runner on the real scripted upstream, reached over HTTP on one wire through
// the router, as the server builds it.
type rig struct {
	runner  *Runner
	scripts *scripted.Server
	runs    *memRuns
}

// newRig starts a scripted upstream and a runner on it; wire is "responses" or "chat",
// mode the endpoint's JSON mode.
func newRig(t *testing.T, wire, mode string, opts Options) *rig {
	t.Helper()
	scripts := scripted.New(scripted.Options{Pace: -1})
	hs := httptest.NewServer(scripts)
	t.Cleanup(hs.Close)
	var client router.Streamer
	if wire == "chat" {
		c := upstream.NewChat(upstream.ChatConfig{BaseURL: hs.URL + "/v1"})
		t.Cleanup(c.CloseIdleConnections)
		client = c
	} else {
		c := upstream.New(upstream.Config{BaseURL: hs.URL + "/v1"})
		t.Cleanup(c.CloseIdleConnections)
		client = c
	}
	r, err := router.New([]router.Endpoint{{ID: 1, Provider: "scripted", Model: "scripted-model", Client: client, JSONMode: mode}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := Load(skills.New().JSON())
	if err != nil {
		t.Fatal(err)
	}
	runs := &memRuns{}
	return &rig{runner: New(cat, r, runs, opts), scripts: scripts, runs: runs}
}

// run runs skill on input (a JSON object) and returns the stored run with its output and
// meta decoded.
func (g *rig) run(t *testing.T, skill, locale string, input any) (*store.SkillRun, map[string]any, meta) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	run, err := g.runner.Run(t.Context(), Request{UserID: "u1", Skill: skill, Locale: locale, SourceID: "agent-1", Input: raw})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var out map[string]any
	if !run.Output.IsNull() {
		if err := json.Unmarshal(run.Output, &out); err != nil {
			t.Fatal(err)
		}
	}
	var m meta
	if err := json.Unmarshal(run.Meta, &m); err != nil {
		t.Fatal(err)
	}
	return run, out, m
}

// errorCode is a failed run's error code, "" for a run that succeeded.
func errorCode(t *testing.T, run *store.SkillRun) string {
	t.Helper()
	if run.Error.IsNull() {
		return ""
	}
	var e struct{ Code string }
	if err := json.Unmarshal(run.Error, &e); err != nil {
		t.Fatal(err)
	}
	return e.Code
}

// sentLines are the snapshot sizes the upstream saw, one per request.
func (g *rig) sentLines(t *testing.T) []int {
	t.Helper()
	var out []int
	for _, r := range g.scripts.Requests() {
		var body struct {
			Input    []upstream.InputItem `json:"input"`
			Messages []struct {
				Role, Content string
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		user := ""
		for _, in := range body.Input {
			user = in.Content
		}
		for _, m := range body.Messages {
			if m.Role == "user" {
				user = m.Content
			}
		}
		_, rest, _ := strings.Cut(user, "<terminal>\n")
		snap, _, _ := strings.Cut(rest, "\n</terminal>")
		out = append(out, strings.Count(snap, "\n")+1)
	}
	return out
}

const question = "⏺ Which approach do you prefer?\n  A) Enhance the existing React todo app\n  B) Start fresh\n\n❯ "

func TestTerminalStateOnBothWiresAndLocales(t *testing.T) {
	for _, wire := range []string{"responses", "chat"} {
		for _, locale := range []string{"en", "zh"} {
			t.Run(wire+"/"+locale, func(t *testing.T) {
				g := newRig(t, wire, upstream.JSONModeTextJSON, Options{})
				run, out, m := g.run(t, "terminal_state", locale, map[string]any{"terminal": question, "agent": "claude_code"})
				if run.Status != store.RunSucceeded || out["status"] != "has_question" || out["message_type"] != "choice" {
					t.Fatalf("run %s, output %v", run.Status, out)
				}
				if out["fingerprint"] != "which-approach-you-prefer" {
					t.Errorf("fingerprint = %v", out["fingerprint"])
				}
				want := meta{Attempts: 1, DecidedBy: "model", WindowLines: []int{5}, ProviderDetected: "scripted",
					OutputModeUsed: "text_json", EndpointID: 1, ResolvedModel: "scripted-model", Screen: &screenMeta{Agent: "claude_code"}}
				m.Usage, m.LatencyMS = usage{}, 0
				if diff := cmp.Diff(want, m); diff != "" {
					t.Errorf("meta (-want +got):\n%s", diff)
				}
				if run.Fingerprint != "which-approach-you-prefer" || run.Locale != locale {
					t.Errorf("stored fingerprint %q, locale %q", run.Fingerprint, run.Locale)
				}
				var body map[string]any
				if err := json.Unmarshal(g.scripts.Requests()[0].Body, &body); err != nil {
					t.Fatal(err)
				}
				if got := sentLimit(body); got != 2048 {
					t.Errorf("the request's output limit is %v, want terminal_state's max_output_tokens, 2048", got)
				}
			})
		}
	}
}

func TestABusyAgentIsAnsweredByTheRules(t *testing.T) {
	g := newRig(t, "responses", upstream.JSONModeTextJSON, Options{})
	run, out, m := g.run(t, "terminal_state", "en", map[string]any{"terminal": "⏺ Reading files\n\n✶ Brewing… (12s · esc to interrupt)\n\n❯ "})
	if run.Status != store.RunSucceeded || out["status"] != "processing" || out["context_complete"] != true {
		t.Fatalf("run %s, output %v", run.Status, out)
	}
	if m.Attempts != 0 || m.DecidedBy != "rules" || m.OutputModeUsed != "rules" || len(g.scripts.Requests()) != 0 {
		t.Errorf("meta %+v, %d upstream requests; want no call", m, len(g.scripts.Requests()))
	}
	if run.Fingerprint != store.StateMark+"processing" {
		t.Errorf("a busy agent's run marks work for the de-duplication: fingerprint %q", run.Fingerprint)
	}
}

// A question the screen states with one reading is answered by the rules too: options,
// what waits for approval and the keys of each option, in the run's language.
func TestAnApprovalIsReadByTheRules(t *testing.T) {
	const screen = "⏺ Bash(ls -la)\n\nBash command\n\n  ls -la\n  List the files\n\nDo you want to proceed?\n" +
		"❯ 1. Yes\n  2. No, and tell Claude what to do differently (esc)\n\nEsc to cancel · Tab to amend"
	for _, locale := range []string{"en", "zh"} {
		g := newRig(t, "responses", upstream.JSONModeTextJSON, Options{})
		run, out, m := g.run(t, "terminal_state", locale, map[string]any{"terminal": screen})
		if run.Status != store.RunSucceeded || out["status"] != "has_question" || out["message_type"] != "choice" {
			t.Fatalf("run %s, output %v", run.Status, out)
		}
		if m.Attempts != 0 || m.DecidedBy != "rules" || len(g.scripts.Requests()) != 0 {
			t.Errorf("meta %+v, %d upstream requests; want no call", m, len(g.scripts.Requests()))
		}
		hint := map[string]string{"en": "Reply with a letter/number to choose", "zh": "回复字母/数字选择"}[locale]
		wantMsg := "Do you want to proceed?\nls -la\n1. Yes\n2. No, and tell Claude what to do differently\n\n" + hint
		if out["message"] != wantMsg {
			t.Errorf("%s message %q, want %q", locale, out["message"], wantMsg)
		}
		wantScreen := &screenMeta{Agent: "claude_code", Rule: "menu", Subject: "ls -la", Keys: [][]string{{"1"}, {"2"}}}
		if diff := cmp.Diff(wantScreen, m.Screen); diff != "" {
			t.Errorf("meta.screen (-want +got):\n%s", diff)
		}
		if run.Fingerprint != out["fingerprint"] || !strings.Contains(run.Fingerprint, "ls-la") {
			t.Errorf("fingerprint %q (stored %q) should name the command", out["fingerprint"], run.Fingerprint)
		}
	}
}

// snapshot is a screen of n lines ending in a question.
func snapshot(n int, marker string) string {
	var b strings.Builder
	for i := range n - 3 {
		fmt.Fprintf(&b, "⏺ line %d of the plan\n", i+1)
	}
	b.WriteString(marker + " Shall I go ahead with this plan?\n\n❯ ")
	return b.String()
}

func TestWideningSizesAsTheUpstreamSawThem(t *testing.T) {
	cases := []struct {
		name   string
		lines  int
		marker string
		want   []int
		whole  bool // context_complete in the end
	}{
		{"complete at once", 213, "", []int{80}, true},
		{"complete at 150", 213, "[[fault:context_incomplete_below:120]]", []int{80, 150}, true},
		{"the whole snapshot once", 213, "[[fault:context_incomplete_below:200]]", []int{80, 150, 213}, true},
		{"still incomplete with everything sent", 213, "[[fault:context_incomplete_below:999]]", []int{80, 150, 213}, false},
		{"a long snapshot widens to 800", 900, "[[fault:context_incomplete_below:700]]", []int{80, 150, 300, 500, 800}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, "responses", upstream.JSONModeTextJSON, Options{})
			run, out, m := g.run(t, "terminal_state", "en", map[string]any{"terminal": snapshot(tc.lines, tc.marker)})
			if run.Status != store.RunSucceeded || out["context_complete"] != tc.whole {
				t.Fatalf("run %s, output %v", run.Status, out)
			}
			if !cmp.Equal(m.WindowLines, tc.want) || !cmp.Equal(g.sentLines(t), tc.want) || m.Attempts != len(tc.want) {
				t.Errorf("window_lines %v, upstream saw %v, %d calls; want %v", m.WindowLines, g.sentLines(t), m.Attempts, tc.want)
			}
		})
	}
}

func TestFaultMarkers(t *testing.T) {
	cases := []struct {
		name, skill, marker string
		status, code        string
		attempts            int
		repaired, output    bool
	}{
		{"fenced", "terminal_state", "[[fault:json_fenced]]", store.RunSucceeded, "", 1, true, true},
		{"invalid once", "terminal_state", "[[fault:json_invalid_once]]", store.RunSucceeded, "", 2, false, true},
		{"invalid", "terminal_state", "[[fault:json_invalid]]", store.RunFailed, failure.SkillOutputInvalid, 2, false, false},
		{"schema violation once", "post_views", "[[fault:schema_violation_once]]", store.RunSucceeded, "", 2, false, true},
		{"schema violation", "post_views", "[[fault:schema_violation]]", store.RunFailed, failure.SkillOutputInvalid, 2, false, false},
		{"english reasoning once", "post_views", "[[fault:english_reasoning_once]]", store.RunSucceeded, "", 2, false, true},
		{"english reasoning", "post_views", "[[fault:english_reasoning]]", store.RunFailed, failure.LanguageViolationAfterRetry, 2, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, "responses", upstream.JSONModeTextJSON, Options{})
			input := map[string]any{"terminal": tc.marker + "\n" + question}
			if tc.skill == "post_views" {
				input = map[string]any{"content_text": "$BTC breakout, buying more " + tc.marker}
			}
			run, out, m := g.run(t, tc.skill, "en", input)
			if run.Status != tc.status || errorCode(t, run) != tc.code || m.Attempts != tc.attempts || m.Repaired != tc.repaired || (out != nil) != tc.output {
				t.Errorf("status %s, code %q, attempts %d, repaired %v, output %v; want %s, %q, %d, %v, output %v",
					run.Status, errorCode(t, run), m.Attempts, m.Repaired, out, tc.status, tc.code, tc.attempts, tc.repaired, tc.output)
			}
			if tc.attempts == 2 && len(m.Refused) == 0 {
				t.Errorf("meta.refused is empty after a correction retry")
			}
		})
	}
}

func TestTheCorrectionNoteNamesWhatWasWrong(t *testing.T) {
	g := newRig(t, "responses", upstream.JSONModeTextJSON, Options{})
	g.run(t, "post_views", "en", map[string]any{"content_text": "$BTC to the moon [[fault:schema_violation_once]]"})
	g.run(t, "post_views", "en", map[string]any{"content_text": "$ETH dump incoming [[fault:english_reasoning_once]]"})
	reqs := g.scripts.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	instructions := func(i int) string {
		var body struct{ Instructions string }
		_ = json.Unmarshal(reqs[i].Body, &body)
		return body.Instructions
	}
	if s := instructions(1); !strings.Contains(s, "Correction retry: previous output was not accepted.") || !strings.Contains(s, "/stance: value must be one of") {
		t.Errorf("schema correction: %s", s)
	}
	if s := instructions(3); !strings.Contains(s, "Correction retry: previous output had non-Chinese reasoning.") {
		t.Errorf("language correction: %s", s)
	}
	if strings.Contains(instructions(0), "Correction") || strings.Contains(instructions(2), "Correction") {
		t.Error("a first call carries a correction note")
	}
}

func TestPostViewsLanguageMeta(t *testing.T) {
	g := newRig(t, "chat", upstream.JSONModeStructured, Options{})
	run, out, m := g.run(t, "post_views", "zh", map[string]any{"content_text": "比特币 $BTC 突破了，看多 [[fault:english_reasoning_once]]",
		"assets": []any{map[string]any{"symbol": "BTC", "name": "Bitcoin", "market": "CRYPTO"}}, "posted_at": "2026-11-30T08:00:00Z"})
	if run.Status != store.RunSucceeded || out["as_of"] != "2026-11-30" || out["stance"] != "bull" {
		t.Fatalf("run %s, output %v", run.Status, out)
	}
	if *m.ReasoningLanguage != "zh" || !*m.ReasoningLanguageViolation || !*m.ReasoningLanguageRetryUsed || m.OutputModeUsed != "structured" {
		t.Errorf("meta %+v", m)
	}
}

func TestAStalledCallEndsWithinTheTimeout(t *testing.T) {
	g := newRig(t, "responses", upstream.JSONModeTextJSON, Options{CallTimeout: 300 * time.Millisecond})
	run, _, m := g.run(t, "terminal_state", "en", map[string]any{"terminal": "[[fault:stall]]\n" + question})
	if run.Status != store.RunFailed || errorCode(t, run) != failure.UpstreamTimeout || m.Attempts != 1 {
		t.Errorf("status %s, code %q, attempts %d; want failed, upstream_timeout, 1", run.Status, errorCode(t, run), m.Attempts)
	}
}

func TestStructuredModeSendsTheStrictSchema(t *testing.T) {
	for _, wire := range []string{"responses", "chat"} {
		t.Run(wire, func(t *testing.T) {
			g := newRig(t, wire, upstream.JSONModeStructured, Options{})
			g.run(t, "terminal_state", "en", map[string]any{"terminal": question})
			var body map[string]any
			if err := json.Unmarshal(g.scripts.Requests()[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			outer, inner := "text", "format"
			if wire == "chat" {
				outer, inner = "response_format", "json_schema"
			}
			holder, _ := body[outer].(map[string]any)
			format, _ := holder[inner].(map[string]any)
			schema, _ := format["schema"].(map[string]any)
			if format["strict"] != true || format["name"] != "terminal_state" || schema["additionalProperties"] != false || schema["if"] != nil {
				t.Errorf("format %v", format)
			}
			if body["temperature"] != 0.0 || body["tools"] != nil {
				t.Errorf("temperature %v, tools %v", body["temperature"], body["tools"])
			}
		})
	}
}

// An answer past 256 KiB is not read: the call stops, and the run fails after its retry.
func TestAnAnswerTooLargeIsNotParsed(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n")
		for range 5 {
			fmt.Fprintf(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":%q}\n\n", big)
		}
		fmt.Fprint(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\"}}\n\n")
	}))
	t.Cleanup(hs.Close)
	c := upstream.New(upstream.Config{BaseURL: hs.URL})
	t.Cleanup(c.CloseIdleConnections)
	r, err := router.New([]router.Endpoint{{ID: 1, Provider: "p", Client: c}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := Load(skills.New().JSON())
	if err != nil {
		t.Fatal(err)
	}
	run, err := New(cat, r, &memRuns{}, Options{}).Run(t.Context(), Request{UserID: "u", Skill: "terminal_state", Input: json.RawMessage(`{"terminal":"q?"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunFailed || errorCode(t, run) != failure.SkillOutputInvalid {
		t.Errorf("status %s, code %q", run.Status, errorCode(t, run))
	}
}
