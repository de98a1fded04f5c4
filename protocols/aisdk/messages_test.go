package aisdk

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// A conversation loads as the user's text and each finished reply's reasoning, answer,
// cards, state and calls; a reply still being written is left out.
func TestUIMessages(t *testing.T) {
	done := time.Now()
	msgs := []store.Message{
		{ID: "u1", Role: store.RoleUser, Content: "Draft a strategy"},
		{ID: "a1", Role: store.RoleAssistant, CompletedAt: &done,
			Content: "<thinking><phase id=\"1\"><title>Plan</title>Think.</phase></thinking>\n<final>\nThe answer.</final>",
			Metadata: store.JSON(`{"phase":"strategy","genui":[{"type":"strategy_ref","strategy_id":"s1"}],"state_patch":{"a":1},` +
				`"tool_calls":[{"server_label":"engine","name":"validate","arguments":{"x":1},"status":"failure","error":"boom","duration_ms":1,"attempt":1}]}`)},
		{ID: "u2", Role: store.RoleUser, Content: "And then?"},
		{ID: "a2", Role: store.RoleAssistant, Content: "<thinking>half"},
	}
	got, err := UIMessages(msgs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"id":"u1","role":"user","parts":[{"type":"text","text":"Draft a strategy","state":"done"}]},` +
		`{"id":"a1","role":"assistant","parts":[{"type":"reasoning","text":"**Plan**\n\nThink.","state":"done"},` +
		`{"type":"text","text":"The answer.","state":"done"},` +
		`{"type":"data-genui","id":"genui-0","data":{"type":"strategy_ref","strategy_id":"s1"}},` +
		`{"type":"data-state","id":"state","data":{"a":1}},` +
		`{"type":"dynamic-tool","state":"output-error","toolName":"engine.validate","toolCallId":"a1-tool-0","input":{"x":1},"errorText":"boom"}],` +
		`"metadata":` + string(msgs[1].Metadata) + `},` +
		`{"id":"u2","role":"user","parts":[{"type":"text","text":"And then?","state":"done"}]}]`
	if string(b) != want {
		t.Errorf("UIMessages =\n%s\nwant\n%s", b, want)
	}
	if _, err := UIMessages([]store.Message{{ID: "a", Role: store.RoleAssistant, CompletedAt: &done, Metadata: store.JSON(`{"genui":1}`)}}); err == nil {
		t.Error("metadata that is not the turn's read without error")
	}
}
