package aisdk

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

// frame is one server-sent event of the stream, decoded.
type frame struct {
	id    string
	chunk map[string]any
	done  bool
}

// frames splits a stream into its events, as an SSE reader does.
func frames(t *testing.T, b []byte) []frame {
	t.Helper()
	var out []frame
	for _, block := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		if block == "" {
			continue
		}
		var f frame
		for _, line := range strings.Split(block, "\n") {
			switch {
			case line == "data: [DONE]":
				f.done = true
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[6:]), &f.chunk); err != nil {
					t.Fatalf("data line %q: %v", line, err)
				}
			case strings.HasPrefix(line, "id: "):
				f.id = line[4:]
			case strings.HasPrefix(line, ":"):
			default:
				t.Fatalf("a line SSE does not know: %q", line)
			}
		}
		out = append(out, f)
	}
	return out
}

// run feeds evs through a Stream and returns what it wrote.
func run(t *testing.T, s *Stream, evs ...store.Event) []frame {
	t.Helper()
	var b []byte
	for _, e := range evs {
		b = s.Append(b, e)
	}
	return frames(t, b)
}

// types lists the chunks' types (and [DONE]) in order.
func types(fs []frame) string {
	var out []string
	for _, f := range fs {
		if f.done {
			out = append(out, "[DONE]")
			continue
		}
		out = append(out, f.chunk["type"].(string))
	}
	return strings.Join(out, " ")
}

func corrected(t *testing.T) []store.Event {
	return []store.Event{
		ev(t, 1, events.Status, events.StatusData{State: events.StateQueued}),
		ev(t, 2, events.ContentDelta, events.DeltaData{Seq: 1, Delta: "<thinking>first</thinking><final>bad"}),
		ev(t, 3, events.Status, events.StatusData{State: events.StateRetrying, Attempt: 2, DiscardThroughSeq: intp(1)}),
		ev(t, 4, events.ContentDelta, events.DeltaData{Seq: 2, Delta: "<thinking>second</thinking><final>good</final>", Attempt: 2}),
		ev(t, 5, events.Completed, events.CompletedData{ReplyLen: 4, Metadata: []byte(
			`{"phase":"strategy","genui":[{"type":"metric_card","title":"x"}],"state_patch":{"a":1},` +
				`"tool_calls":[{"server_label":"risk_lab","name":"run","arguments":{"q":1},"status":"success","output":"ok","duration_ms":3,"attempt":1},` +
				`{"server_label":"risk_lab","name":"run","arguments":null,"status":"failure","error":"boom","duration_ms":3,"attempt":2}]}`)}),
	}
}

// A corrected turn: the refused attempt's parts end marked discarded, the kept one's
// unmarked, under ids of their own; the cards, state and calls follow, then finish and
// [DONE]. Each event's last chunk carries its id.
func TestStreamCorrectedTurn(t *testing.T) {
	fs := run(t, NewStream("m1", 0), corrected(t)...)
	want := "start data-status reasoning-start reasoning-delta text-start text-delta reasoning-end text-end data-status " +
		"reasoning-start reasoning-delta text-start text-delta reasoning-end text-end data-genui data-state " +
		"tool-input-available tool-output-available tool-input-available tool-output-error finish [DONE]"
	if got := types(fs); got != want {
		t.Fatalf("chunks:\n %s\nwant\n %s", got, want)
	}
	if fs[0].chunk["messageId"] != "m1" || fs[0].id != "" || fs[1].id != "1" {
		t.Errorf("start %v (id %q), first status id %q", fs[0].chunk, fs[0].id, fs[1].id)
	}
	discarded := func(f frame) bool {
		pm, _ := f.chunk["providerMetadata"].(map[string]any)
		pf, _ := pm["phaseflow"].(map[string]any)
		return pf["discarded"] == true
	}
	if !discarded(fs[6]) || !discarded(fs[7]) || discarded(fs[13]) || discarded(fs[14]) {
		t.Errorf("discarded marks: %v %v / %v %v", fs[6].chunk, fs[7].chunk, fs[13].chunk, fs[14].chunk)
	}
	if fs[9].chunk["id"] == fs[2].chunk["id"] || fs[11].chunk["id"] == fs[4].chunk["id"] {
		t.Error("the second attempt reuses the refused attempt's part ids")
	}
	if fs[12].chunk["delta"] != "good" || fs[5].chunk["delta"] != "bad" {
		t.Errorf("answers %v / %v", fs[5].chunk, fs[12].chunk)
	}
	if fs[20].chunk["errorText"] != "boom" || fs[17].chunk["toolName"] != "risk_lab.run" || fs[17].chunk["dynamic"] != true {
		t.Errorf("tool parts %v %v", fs[17].chunk, fs[20].chunk)
	}
	md, _ := fs[21].chunk["messageMetadata"].(map[string]any)
	if md["phase"] != "strategy" || fs[21].id != "5" {
		t.Errorf("finish %v (id %q)", fs[21].chunk, fs[21].id)
	}
}

// A client resuming after an event gets nothing up to it, start included, and what follows
// continues the message and parts it holds (no second start of an open part).
func TestStreamResumes(t *testing.T) {
	fs := run(t, NewStream("m1", 2), corrected(t)...)
	if got := types(fs); !strings.HasPrefix(got, "reasoning-end text-end data-status reasoning-start") {
		t.Fatalf("resumed after 2: %s", got)
	}
}

// A failed turn shows the server's short reply marked fallback, then the error; a
// cancelled one ends with abort.
func TestStreamFailures(t *testing.T) {
	fs := run(t, NewStream("m1", 0),
		ev(t, 1, events.ContentDelta, events.DeltaData{Seq: 1, Delta: "<thinking>half"}),
		ev(t, 2, events.Error, events.ErrorData{Code: "provider_error", Message: "The model provider failed.",
			Fallback: "<thinking>x</thinking><final>Cut off; ask again.</final>"}))
	if got := types(fs); got != "start reasoning-start reasoning-delta reasoning-end text-start text-delta text-end error [DONE]" {
		t.Fatalf("failed turn: %s", got)
	}
	if fs[5].chunk["delta"] != "Cut off; ask again." || fs[7].chunk["errorText"] != "The model provider failed." {
		t.Errorf("fallback %v, error %v", fs[5].chunk, fs[7].chunk)
	}
	fs = run(t, NewStream("m1", 0), ev(t, 1, events.Error, events.ErrorData{Code: "cancelled", Message: "cancelled by the user"}))
	if got := types(fs); got != "start abort [DONE]" {
		t.Fatalf("cancelled turn: %s", got)
	}
}

func TestChatRequestCheck(t *testing.T) {
	msgs := func(s string) []requestMsg {
		var m []requestMsg
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	ok := ChatRequest{ID: "c", Messages: msgs(`[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"},{"type":"text","text":" there"}]},{"id":"a1","role":"assistant","parts":[]}]`)}
	if err := ok.Check(); err != nil || ok.Trigger != TriggerSubmit {
		t.Fatalf("Check = %v, trigger %q", err, ok.Trigger)
	}
	if id, text, _ := ok.LastUserMessage(); id != "u1" || text != "hi there" {
		t.Errorf("LastUserMessage = %q %q", id, text)
	}
	for name, r := range map[string]ChatRequest{
		"no id":           {Messages: ok.Messages},
		"no user message": {ID: "c", Messages: msgs(`[{"id":"a","role":"assistant","parts":[{"type":"text","text":"x"}]}]`)},
		"blank text":      {ID: "c", Messages: msgs(`[{"id":"u","role":"user","parts":[{"type":"text","text":"  "}]}]`)},
		"bad trigger":     {ID: "c", Trigger: "resume", Messages: ok.Messages},
	} {
		if err := r.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
