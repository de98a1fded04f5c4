package agui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

func ev(t *testing.T, seq int64, name string, data any) store.Event {
	t.Helper()
	b, err := events.Encode(data)
	if err != nil {
		t.Fatal(err)
	}
	return store.Event{Seq: seq, Name: name, Data: b}
}

func intp(n int) *int { return &n }

// decoded are the events a Stream wrote, as an AG-UI client parses them: data lines only.
func decoded(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, block := range strings.Split(string(b), "\n\n") {
		for _, line := range strings.Split(block, "\n") {
			if rest, ok := strings.CutPrefix(line, "data: "); ok {
				var e map[string]any
				if err := json.Unmarshal([]byte(rest), &e); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				out = append(out, e)
			}
		}
	}
	return out
}

func typesOf(es []map[string]any) string {
	var out []string
	for _, e := range es {
		out = append(out, e["type"].(string))
	}
	return strings.Join(out, " ")
}

func feed(t *testing.T, s *Stream, evs ...store.Event) []map[string]any {
	t.Helper()
	var b []byte
	for _, e := range evs {
		b = s.Append(b, e)
	}
	return decoded(t, b)
}

const posted = `[{"id":"u1","role":"user","content":"Draft a strategy"}]`

func testRun() Run {
	return Run{ThreadID: "t1", RunID: "r1", MessageID: "m1", Messages: json.RawMessage(posted),
		State: State{Phase: "strategy", Artifacts: map[string]any{"strategy": map[string]any{"status": "draft", "old": 1}}}}
}

// A corrected turn: the refused attempt's messages end and a snapshot of the posted
// messages (with the next attempt's reasoning message) takes them back; the kept text is
// the Phaseflow message's; the state patch arrives as JSON Patch on /artifacts, cards as
// activities, MCP calls as tool calls; RUN_FINISHED ends it.
func TestStreamCorrectedTurn(t *testing.T) {
	es := feed(t, NewStream(testRun()),
		ev(t, 1, events.Status, events.StatusData{State: events.StateWorking}),
		ev(t, 2, events.ContentDelta, events.DeltaData{Seq: 1, Delta: "<thinking>first</thinking><final>bad"}),
		ev(t, 3, events.Status, events.StatusData{State: events.StateRetrying, Attempt: 2, DiscardThroughSeq: intp(1)}),
		ev(t, 4, events.ContentDelta, events.DeltaData{Seq: 2, Delta: "<thinking>second</thinking><final>good</final>", Attempt: 2}),
		ev(t, 5, events.Completed, events.CompletedData{Metadata: []byte(`{"phase":"strategy","genui":[{"type":"metric_card"}],` +
			`"state_patch":{"status":"validated","old":null,"note":"n"},` +
			`"tool_calls":[{"server_label":"engine","name":"validate","arguments":{"a":1},"status":"success","output":"ok","duration_ms":1,"attempt":2}]}`)}),
	)
	want := "RUN_STARTED STATE_SNAPSHOT CUSTOM REASONING_START REASONING_MESSAGE_START REASONING_MESSAGE_CONTENT " +
		"TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT REASONING_MESSAGE_END REASONING_END TEXT_MESSAGE_END MESSAGES_SNAPSHOT CUSTOM " +
		"REASONING_START REASONING_MESSAGE_START REASONING_MESSAGE_CONTENT TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT " +
		"REASONING_MESSAGE_END REASONING_END TEXT_MESSAGE_END STATE_DELTA ACTIVITY_SNAPSHOT " +
		"TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END TOOL_CALL_RESULT RUN_FINISHED"
	if got := typesOf(es); got != want {
		t.Fatalf("events:\n %s\nwant\n %s", got, want)
	}
	snap, _ := json.Marshal(es[11]["messages"])
	if string(snap) != `[{"content":"Draft a strategy","id":"u1","role":"user"},{"content":"","id":"m1-reasoning-2","role":"reasoning"}]` {
		t.Errorf("the retry's snapshot = %s", snap)
	}
	if es[16]["messageId"] != "m1" || es[17]["delta"] != "good" || es[14]["messageId"] != "m1-reasoning-2" {
		t.Errorf("kept attempt: %v %v %v", es[14], es[16], es[17])
	}
	ops, _ := json.Marshal(es[21]["delta"])
	if string(ops) != `[{"op":"add","path":"/artifacts/strategy/note","value":"n"},{"op":"remove","path":"/artifacts/strategy/old"},`+
		`{"op":"add","path":"/artifacts/strategy/status","value":"validated"}]` {
		t.Errorf("state delta = %s", ops)
	}
	if es[22]["activityType"] != ActivityGenUI || es[23]["parentMessageId"] != "m1" || es[24]["delta"] != `{"a":1}` || es[26]["content"] != "ok" {
		t.Errorf("cards and calls: %v %v %v %v", es[22], es[23], es[24], es[26])
	}
	if es[27]["threadId"] != "t1" || es[27]["runId"] != "r1" {
		t.Errorf("finish %v", es[27])
	}
}

// A client that joins a run under way gets the posted messages as a snapshot first; a
// phase move is a state delta; a failure is RUN_ERROR after the fallback text, a cancel a
// cancelled RUN_FINISHED.
func TestStreamJoinAndEnds(t *testing.T) {
	run := testRun()
	run.Join = true
	es := feed(t, NewStream(run),
		ev(t, 1, events.Status, events.StatusData{State: events.StatePhaseChanged, From: "strategy", To: "stress_test"}),
		ev(t, 2, events.Error, events.ErrorData{Code: "provider_error", Message: "failed", Fallback: "<thinking>x</thinking><final>Ask again.</final>"}))
	if got := typesOf(es); got != "RUN_STARTED MESSAGES_SNAPSHOT STATE_SNAPSHOT STATE_DELTA TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END RUN_ERROR" {
		t.Fatalf("joined failed run: %s", got)
	}
	if ops, _ := json.Marshal(es[3]["delta"]); string(ops) != `[{"op":"replace","path":"/phase","value":"stress_test"}]` {
		t.Errorf("phase move = %s", ops)
	}
	if es[7]["code"] != "provider_error" || es[5]["delta"] != "Ask again." {
		t.Errorf("error %v, fallback %v", es[7], es[5])
	}
	es = feed(t, NewStream(testRun()), ev(t, 1, events.Error, events.ErrorData{Code: "cancelled", Message: "cancelled"}))
	if got := typesOf(es); got != "RUN_STARTED STATE_SNAPSHOT RUN_FINISHED" || es[2]["outcome"].(map[string]any)["type"] != "cancelled" {
		t.Fatalf("cancelled run: %s %v", got, es)
	}
}

func TestRunAgentInputCheck(t *testing.T) {
	in := RunAgentInput{ThreadID: "t", RunID: "r", Messages: json.RawMessage(
		`[{"id":"u0","role":"user","content":"old"},{"id":"a","role":"assistant","content":"x"},{"id":"u1","role":"user","content":[{"type":"text","text":"new "},{"type":"binary","data":"x"},{"type":"text","text":"text"}]}]`)}
	if text, err := in.Check(); err != nil || text != "new text" {
		t.Fatalf("Check = %q, %v", text, err)
	}
	for name, bad := range map[string]RunAgentInput{
		"no thread":         {RunID: "r", Messages: json.RawMessage(posted)},
		"no run":            {ThreadID: "t", Messages: json.RawMessage(posted)},
		"messages not list": {ThreadID: "t", RunID: "r", Messages: json.RawMessage(`{}`)},
		"no user message":   {ThreadID: "t", RunID: "r", Messages: json.RawMessage(`[{"id":"a","role":"assistant","content":"y"}]`)},
		"blank user text":   {ThreadID: "t", RunID: "r", Messages: json.RawMessage(`[{"id":"u","role":"user","content":" "}]`)},
	} {
		if _, err := bad.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// mergeOps turns a merge patch into operations that, applied, give the merged document.
func TestMergeOps(t *testing.T) {
	cases := []struct {
		name, doc, patch, ops, after string
	}{
		{"set and add", `{"a":1}`, `{"a":2,"b":"x"}`, `[{"op":"add","path":"/p/a","value":2},{"op":"add","path":"/p/b","value":"x"}]`, `{"a":2,"b":"x"}`},
		{"remove only what is there", `{"a":1}`, `{"a":null,"b":null}`, `[{"op":"remove","path":"/p/a"}]`, `{}`},
		{"merge into objects", `{"o":{"k":1,"j":2}}`, `{"o":{"k":null,"n":{"x":null,"y":1}}}`,
			`[{"op":"remove","path":"/p/o/k"},{"op":"add","path":"/p/o/n","value":{"y":1}}]`, `{"o":{"j":2,"n":{"y":1}}}`},
		{"replace a non-object", `{"o":3}`, `{"o":{"k":1}}`, `[{"op":"add","path":"/p/o","value":{"k":1}}]`, `{"o":{"k":1}}`},
		{"escape names", `{}`, `{"a/b~c":false}`, `[{"op":"add","path":"/p/a~1b~0c","value":false}]`, `{"a/b~c":false}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := decodeObject(json.RawMessage(tc.doc))
			ops := mergeOps(doc, decodeObject(json.RawMessage(tc.patch)), "/p")
			gotOps, _ := json.Marshal(ops)
			gotDoc, _ := json.Marshal(doc)
			if string(gotOps) != tc.ops || string(gotDoc) != tc.after {
				t.Errorf("ops %s\nwant %s\ndoc %s, want %s", gotOps, tc.ops, gotDoc, tc.after)
			}
		})
	}
}
