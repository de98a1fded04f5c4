package orchestration

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/session"
)

// TestCompletedCarriesTheStoredMetadata holds the completed event's metadata to the
// message's metadata column, byte for byte: a client that reads the message after the
// stream sees what the stream said. It is encoded once, without HTML escaping, as every
// event is: the title the turn gives an untitled session keeps its "<" and "&".
func TestCompletedCarriesTheStoredMetadata(t *testing.T) {
	h := newHarness(t, &fakeUpstream{scripts: []script{{deltas: []string{reply("")}}}})
	ctx := context.Background()
	sess, err := h.orch.CreateSession(ctx, "u1", "", "en")
	if err != nil {
		t.Fatal(err)
	}
	turn, err := h.orch.HandleMessage(ctx, Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: "Plan R&D for <momentum> now"}})
	if err != nil {
		t.Fatal(err)
	}
	evs := h.follow(turn.MessageID)
	last := evs[len(evs)-1]
	if last.Name != events.Completed {
		t.Fatalf("last event %s, want %s", last.Name, events.Completed)
	}
	var data struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(last.Data, &data); err != nil {
		t.Fatal(err)
	}
	m, err := h.st.GetMessage(ctx, turn.MessageID, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data.Metadata, m.Metadata) {
		t.Fatalf("completed's metadata\n%s\ndiffers from the message's\n%s", data.Metadata, m.Metadata)
	}
	if !bytes.Contains(m.Metadata, []byte(`R&D for <momentum>`)) {
		t.Fatalf("metadata lacks the session's new title as written: %s", m.Metadata)
	}
}
