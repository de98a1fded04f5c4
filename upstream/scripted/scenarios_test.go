package scripted_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/upstream/scripted"
)

// stateInstructions returns instructions holding the [SESSION STATE] block the server's
// prompt builder writes.
func stateInstructions(phase, stage, locale, artifacts string) string {
	return "Follow the output contract.\n\n[SESSION STATE]\nphase: " + phase + "\nstage: " + stage +
		"\nlocale: " + locale + "\nartifacts: " + artifacts + "\n[/SESSION STATE]"
}

// phaseArtifacts returns the artifacts sent with each phase's state, so scenarios that
// reuse an id can be checked.
func phaseArtifacts() map[string]string {
	return map[string]string{
		"strategy":    `{"strategy_status":"draft","backtest_status":"none","advance_to_stress_test":false}`,
		"stress_test": `{"scenario_set_id":"scn-fixture","stress_report_id":"rep-fixture","stress_test_decision":"pending"}`,
		"deployment":  `{"deployment_target":"paper","risk_guard_status":"armed","deployment_id":"dep-fixture","deployment_status":"deployed"}`,
	}
}

// scenarioWant is what one scenario must produce. A scenario with a stage is played by the
// state block alone; one without is asked for with [[scenario:NAME]]. patch has fresh ids
// written scn-ID, rep-ID, dep-ID and no summary; "" means no patch.
type scenarioWant struct {
	name, phase, stage string
	calls              []string // "server/tool", with " failed" for a failed call
	genUI              []string
	patch              string
	wantSummary        bool
}

func scenarioWants() []scenarioWant {
	return []scenarioWant{
		{name: "strategy_draft", phase: "strategy", stage: "draft",
			calls: []string{"strategy_engine/validate_strategy failed", "strategy_engine/validate_strategy"}, genUI: []string{"strategy_card"},
			patch:       `{"strategy_draft":{"name":"BTC momentum","spec":{"symbol":"BTC-USD","timeframe":"4h","entry":{"indicator":"rate_of_change","lookback":20,"threshold":0.03},"exit":{"trailing_stop":0.05,"take_profit":0.12},"position_size":0.1}},"strategy_status":"draft"}`,
			wantSummary: true},
		{name: "strategy_backtest", phase: "strategy", stage: "backtest",
			calls: []string{"strategy_engine/run_backtest"}, genUI: []string{"metric_table"},
			patch: `{"backtest_status":"completed","strategy_status":"validated"}`},
		{name: "strategy_confirm", phase: "strategy", stage: "confirm", genUI: []string{"choice_prompt"}},
		{name: "bad_patch", phase: "strategy", patch: `{"strategy_status":"bogus"}`},
		{name: "genui_not_allowed", phase: "strategy", genUI: []string{"deployment_summary"}},
		{name: "stress_bootstrap", phase: "stress_test", stage: "bootstrap", genUI: []string{"scenario_table"},
			patch: `{"scenario_set_id":"scn-ID","stress_test_decision":"pending"}`},
		{name: "stress_scenario", phase: "stress_test", stage: "scenario",
			calls: []string{"risk_lab/run_stress_scenarios"}, genUI: []string{"stress_report"},
			patch: `{"stress_report_id":"rep-ID"}`},
		{name: "stress_feedback_pass", phase: "stress_test", stage: "feedback", genUI: []string{"stress_report"},
			patch: `{"stress_test_decision":"pass"}`, wantSummary: true},
		{name: "stress_feedback_revise", phase: "stress_test", genUI: []string{"stress_report"},
			patch: `{"stress_test_decision":"revise"}`, wantSummary: true},
		{name: "deploy_prepare", phase: "deployment", stage: "prepare",
			calls: []string{"deployer/check_risk_guard"}, genUI: []string{"deployment_summary"},
			patch: `{"deployment_target":"paper","risk_guard_status":"armed"}`},
		{name: "deploy_rollout", phase: "deployment", stage: "rollout",
			calls: []string{"deployer/deploy_strategy"}, genUI: []string{"rollout_status"},
			patch: `{"rollout_status":"done","deployment_id":"dep-ID","deployment_status":"deployed"}`},
		{name: "deploy_monitor_completed", phase: "deployment", stage: "monitor",
			calls: []string{"deployer/check_risk_guard"}, genUI: []string{"deployment_summary"},
			patch: `{"deployment_status":"completed"}`},
		{name: "deploy_monitor_blocked", phase: "deployment",
			calls: []string{"deployer/check_risk_guard"}, genUI: []string{"deployment_summary"},
			patch: `{"deployment_status":"blocked","blocker_code":"risk_limit_exceeded"}`},
	}
}

// userTexts returns a plain user message per locale.
func userTexts() map[string]string {
	return map[string]string{"en": "Sounds good, let's continue.", "zh": "好的，我们继续吧。"}
}

func TestScenarios(t *testing.T) {
	_, c := start(t, scripted.Options{Pace: -1, ChunkSize: 7})
	for _, want := range scenarioWants() {
		for _, locale := range []string{"en", "zh"} {
			t.Run(want.name+"/"+locale, func(t *testing.T) {
				t.Parallel()
				stage, user := want.stage, userTexts()[locale]
				if stage == "" {
					user += " [[scenario:" + want.name + "]]"
				}
				tr := ask(t.Context(), c, stateInstructions(want.phase, stage, locale, phaseArtifacts()[want.phase]), user)
				checkScenarioTurn(t, tr, want, locale)
				if regexp.MustCompile(placeholder).MatchString(tr.text) {
					t.Errorf("a placeholder is left in the reply:\n%s", tr.text)
				}
			})
		}
	}
}

// checkScenarioTurn checks what both wires' scenario tests check of a turn: it completed,
// its reply and blocks are the scenario's, and it made the scenario's tool calls.
func checkScenarioTurn(t *testing.T, tr turn, want scenarioWant, locale string) {
	t.Helper()
	if tr.err != nil || !tr.completed() {
		t.Fatalf("err = %v, completed = %v", tr.err, tr.completed())
	}
	reply, blocks := filterReply(tr.chunks)
	checkReply(t, reply, locale)
	checkBlocks(t, want, locale, blocks)
	if got := toolCalls(t, tr.events); !slices.Equal(got, want.calls) {
		t.Errorf("tool calls = %q, want %q", got, want.calls)
	}
}

// placeholder matches a fixture placeholder that was not filled in.
const placeholder = `\{(uuid|id|scenario_set_id|stress_report_id|deployment_id)\}`

// filterReply runs the reply's deltas through the stream filter, as the server does, and
// returns the forwarded text and the withheld blocks.
func filterReply(chunks []string) (string, []thinkingml.Block) {
	f := thinkingml.NewFilter()
	var (
		b      strings.Builder
		blocks []thinkingml.Block
	)
	for _, c := range chunks {
		out, bl := f.Write(c)
		b.WriteString(out)
		blocks = append(blocks, bl...)
	}
	out, bl := f.Close()
	b.WriteString(out)
	return b.String(), append(blocks, bl...)
}

// checkReply checks that the forwarded reply is valid ThinkingML in the locale's language.
func checkReply(t *testing.T, reply, locale string) {
	t.Helper()
	if res := thinkingml.Validate(reply, thinkingml.Options{}); !res.Valid || len(res.Warnings) > 0 {
		t.Errorf("invalid reply: %+v\n%s", res, reply)
	}
	if res := thinkingml.CheckLanguage(reply, locale); !res.OK {
		t.Errorf("language check for %s: %s\n%s", locale, res.Reason, reply)
	}
}

// freshID matches the fresh ids of scenario sets, reports and deployments.
const freshID = `\b(scn|rep|dep)-[0-9a-f]{12}\b`

// checkBlocks checks the withheld GenUI and patch blocks against want.
func checkBlocks(t *testing.T, want scenarioWant, locale string, blocks []thinkingml.Block) {
	t.Helper()
	var genUI []string
	patch := ""
	for _, b := range blocks {
		switch b.Name {
		case thinkingml.BlockUIJSON:
			var objs []struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal([]byte(b.Body), &objs); err != nil {
				t.Errorf("GenUI is not a JSON array: %v\n%s", err, b.Body)
			}
			for _, o := range objs {
				genUI = append(genUI, o.Type)
			}
		case thinkingml.BlockStatePatch:
			if patch != "" {
				t.Errorf("two patches")
			}
			patch = checkPatch(t, want, locale, b.Body)
		}
	}
	if !slices.Equal(genUI, want.genUI) {
		t.Errorf("GenUI types = %q, want %q", genUI, want.genUI)
	}
	if patch != canonical(t, want.patch) {
		t.Errorf("patch = %s\nwant    %s", patch, want.patch)
	}
}

// checkPatch parses a patch, checks its summary, and returns it without the summary, its
// keys sorted and fresh ids written as in scenarioWant.patch.
func checkPatch(t *testing.T, want scenarioWant, locale, body string) string {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(body), &obj); err != nil {
		t.Errorf("patch is not a JSON object: %v\n%s", err, body)
		return body
	}
	summary, ok := obj["summary"].(string)
	if ok != want.wantSummary || (ok && !thinkingml.CheckLanguage("<final>"+summary+"</final>", locale).OK) {
		t.Errorf("summary = %q (present %v), want present %v in %s", summary, ok, want.wantSummary, locale)
	}
	delete(obj, "summary")
	return regexp.MustCompile(freshID).ReplaceAllString(canonical(t, obj), "$1-ID")
}

// canonical is v as JSON with object keys sorted; a string is decoded first.
func canonical(t *testing.T, v any) string {
	t.Helper()
	if s, ok := v.(string); ok {
		if s == "" {
			return ""
		}
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("bad JSON %s: %v", s, err)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolCalls checks that every started call is done next with the same id, server and tool,
// and returns the calls as "server/tool" (" failed" added for a failure).
func toolCalls(t *testing.T, events []upstream.Event) []string {
	t.Helper()
	var (
		out  []string
		open *upstream.ToolCall
	)
	for _, ev := range events {
		switch ev.Kind {
		case upstream.EventToolCallStarted:
			if open != nil {
				t.Errorf("call %s started before %s was done", ev.Tool.ID, open.ID)
			}
			open = ev.Tool
		case upstream.EventToolCallDone:
			tc := ev.Tool
			if open == nil || open.ID != tc.ID || open.ServerLabel != tc.ServerLabel || open.Name != tc.Name {
				t.Errorf("done %+v does not match started %+v", tc, open)
			}
			open = nil
			if !json.Valid([]byte(tc.Arguments)) || (tc.Failed != (tc.Error != "")) || (!tc.Failed && !json.Valid([]byte(tc.Output))) {
				t.Errorf("done call %+v: want JSON arguments, and an error exactly when failed, else JSON output", tc)
			}
			name := tc.ServerLabel + "/" + tc.Name
			if tc.Failed {
				name += " failed"
			}
			out = append(out, name)
		case upstream.EventTextDelta:
			if open != nil {
				t.Errorf("text arrived while call %s was open", open.ID)
			}
		}
	}
	return out
}

// TestFailedCallThenRetry is the round trip of transcript C through the upstream client:
// the failed validate_strategy call comes out Failed with its error text, and the retry,
// with equal arguments, succeeds with a fresh strategy_id.
func TestFailedCallThenRetry(t *testing.T) {
	_, c := start(t, scripted.Options{Pace: -1})
	tr := ask(t.Context(), c, stateInstructions("strategy", "draft", "en", phaseArtifacts()["strategy"]), "Build me a BTC momentum strategy.")
	if tr.err != nil || !tr.completed() {
		t.Fatalf("err = %v, completed = %v", tr.err, tr.completed())
	}
	var started, done []upstream.ToolCall
	for _, ev := range tr.events {
		switch ev.Kind {
		case upstream.EventToolCallStarted:
			started = append(started, *ev.Tool)
		case upstream.EventToolCallDone:
			done = append(done, *ev.Tool)
		}
	}
	if len(started) != 2 || len(done) != 2 {
		t.Fatalf("started %d, done %d calls; want 2 and 2", len(started), len(done))
	}
	failed, retry := done[0], done[1]
	if !failed.Failed || !strings.Contains(failed.Error, "timed out") || failed.Output != "" {
		t.Errorf("first call = %+v, want Failed with the tool's error text", failed)
	}
	if retry.Failed || retry.Error != "" || retry.ID == failed.ID || retry.Arguments != failed.Arguments ||
		retry.Name != "validate_strategy" || retry.ServerLabel != "strategy_engine" {
		t.Errorf("retry = %+v, want a new successful call of the same tool with the same arguments as %+v", retry, failed)
	}
	var out struct {
		StrategyID string `json:"strategy_id"`
		Status     string `json:"status"`
	}
	if err := json.Unmarshal([]byte(retry.Output), &out); err != nil || uuid.Validate(out.StrategyID) != nil || out.Status != "validated" {
		t.Errorf("retry output %q: want a fresh UUID strategy_id and status validated", retry.Output)
	}
	for i := range started {
		if started[i].ID != done[i].ID || started[i].Arguments != "" || started[i].Failed {
			t.Errorf("started %+v, then done %+v", started[i], done[i])
		}
	}
	again := toolOutputs(ask(t.Context(), c, stateInstructions("strategy", "draft", "en", "{}"), "once more").events)
	if !strings.Contains(again, `"strategy_id":"`) || strings.Contains(again, out.StrategyID) {
		t.Errorf("a second draft's outputs %q reuse the strategy_id %s", again, out.StrategyID)
	}
}

// toolOutputs joins the outputs of the done tool calls among events.
func toolOutputs(events []upstream.Event) string {
	var b strings.Builder
	for _, ev := range events {
		if ev.Kind == upstream.EventToolCallDone {
			b.WriteString(ev.Tool.Output)
		}
	}
	return b.String()
}

// TestFaultsOnScenarios checks that fault markers still work when a scenario plays.
func TestFaultsOnScenarios(t *testing.T) {
	_, c := start(t, scripted.Options{Pace: -1})
	instructions := stateInstructions("strategy", "draft", "zh", phaseArtifacts()["strategy"])

	user := "起草策略 [[fault:broken_xml_once]]"
	for i, wantValid := range []bool{false, true} {
		tr := ask(t.Context(), c, instructions, user)
		reply, _ := filterReply(tr.chunks)
		if !tr.completed() || len(toolCalls(t, tr.events)) != 2 || thinkingml.Validate(reply, thinkingml.Options{}).Valid != wantValid {
			t.Errorf("request %d: completed %v, tools %v, valid = %v, want %v", i+1, tr.completed(), toolCalls(t, tr.events), !wantValid, wantValid)
		}
	}

	tr := ask(t.Context(), c, instructions, "[[scenario:deploy_rollout]] [[fault:wrong_language]]")
	reply, _ := filterReply(tr.chunks)
	if !tr.completed() || thinkingml.CheckLanguage(reply, "zh").OK || !thinkingml.CheckLanguage(reply, "en").OK {
		t.Errorf("wrong_language on a scenario: want an English reply to a zh session:\n%s", reply)
	}

	tr = ask(t.Context(), c, instructions, "[[fault:mid_stream_error]]")
	if tr.completed() || tr.err == nil || tr.deltas == 0 || len(toolCalls(t, tr.events)) != 2 {
		t.Errorf("mid_stream_error on a scenario: completed %v, err %v, deltas %d, tools %v; want the calls, some text, then the error",
			tr.completed(), tr.err, tr.deltas, toolCalls(t, tr.events))
	}
}

// TestRecordedToolHeaders checks that the record keeps the MCP tools of a request, with
// their headers (the x-mcp-context JWT), as the server sent them.
func TestRecordedToolHeaders(t *testing.T) {
	run, c := start(t, scripted.Options{Pace: -1})
	tool := `{"type":"mcp","server_label":"strategy_engine","server_url":"https://mcp.example/strategy",` +
		`"headers":{"x-mcp-context":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSJ9.c2ln"},"require_approval":"never",` +
		`"allowed_tools":["validate_strategy","run_backtest"]}`
	req := upstream.Request{
		Instructions: stateInstructions("strategy", "draft", "en", "{}"),
		Input:        []upstream.InputItem{{Role: "user", Content: "draft"}},
		Tools:        []json.RawMessage{json.RawMessage(tool)},
	}
	for _, err := range c.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
	}
	recs := run.Server().Requests()
	var body struct {
		Tools []map[string]any `json:"tools"`
	}
	if len(recs) != 1 || json.Unmarshal(recs[0].Body, &body) != nil || len(body.Tools) != 1 {
		t.Fatalf("recorded %d requests: %+v", len(recs), recs)
	}
	var want map[string]any
	_ = json.Unmarshal([]byte(tool), &want)
	if canonical(t, body.Tools[0]) != canonical(t, want) {
		t.Errorf("recorded tool %v, want %v", body.Tools[0], want)
	}
	headers, _ := body.Tools[0]["headers"].(map[string]any)
	if headers["x-mcp-context"] != "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSJ9.c2ln" {
		t.Errorf("tool headers %v", headers)
	}
}
