package orchestration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
)

// TestLaterTurnsReadWhatEarlierOnesLeft: a session's first turn makes no plan reads (its
// lock saw nothing to read), and that must never cost a later turn its history or an
// admin's stored prompt. The second turn's request carries the first exchange; after a
// stored contract is activated, the third turn's instructions are that contract.
func TestLaterTurnsReadWhatEarlierOnesLeft(t *testing.T) {
	up := &fakeUpstream{scripts: []script{{deltas: []string{reply("")}}}}
	h := newHarness(t, up)
	ctx := context.Background()
	sess, err := h.orch.CreateSession(ctx, "u1", "t", "en")
	if err != nil {
		t.Fatal(err)
	}
	turn := func(text string) string {
		t.Helper()
		tr, err := h.orch.HandleMessage(ctx, Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: text}})
		if err != nil {
			t.Fatal(err)
		}
		h.follow(tr.MessageID)
		up.mu.Lock()
		req := up.requests[len(up.requests)-1]
		up.mu.Unlock()
		raw, err := json.Marshal([]any{req.Instructions, req.Input})
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	turn("the first question, about momentum")
	if second := turn("the second question"); !strings.Contains(second, "the first question, about momentum") {
		t.Errorf("the second turn's request lacks the first exchange:\n%s", second)
	}
	p := &store.Prompt{Name: "contract", Locale: "en", Body: "STORED CONTRACT FOR THIS TEST", CreatedBy: "admin"}
	if err := h.st.CreatePrompt(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.ActivatePrompt(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if third := turn("the third question"); !strings.Contains(third, "STORED CONTRACT FOR THIS TEST") {
		t.Errorf("the third turn's request does not use the activated stored contract:\n%s", third)
	}
}
