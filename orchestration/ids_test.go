package orchestration

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/phaseflow/phaseflow/orchestration/session"
)

// TestIDsSortByCreation holds the ids of sessions and messages to version 7 UUIDs, in the
// order their rows were created. A client may sort by them, and the event log's index,
// which starts with the message id, is cheap to write only while concurrent turns' ids sit
// side by side (store.NewID says how much that saves).
func TestIDsSortByCreation(t *testing.T) {
	h := newHarness(t, &fakeUpstream{scripts: []script{{deltas: []string{reply("")}}}})
	ctx := context.Background()
	var ids []string
	for range 2 {
		sess, err := h.orch.CreateSession(ctx, "u1", "t", "en")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
		for range 2 {
			turn, err := h.orch.HandleMessage(ctx, Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: "hello there"}})
			if err != nil {
				t.Fatal(err)
			}
			h.follow(turn.MessageID)
		}
		msgs, err := h.st.ListMessages(ctx, sess.ID, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 4 {
			t.Fatalf("%d messages, want 4", len(msgs))
		}
		for _, m := range msgs { // listed by creation time
			ids = append(ids, m.ID)
		}
	}
	for i, id := range ids {
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 {
			t.Fatalf("id %q is not a version 7 UUID (err %v)", id, err)
		}
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("id %s, created after %s, does not sort after it", id, ids[i-1])
		}
	}
}
