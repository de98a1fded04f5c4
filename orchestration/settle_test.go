package orchestration

import (
	"context"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// TestAForeignStrategyFailsTheTurn plays a turn whose validate_strategy call hands back
// another user's strategy id. The turn's settlement rides on its completed event, and the
// store refuses it there: the turn ends with an internal error instead, nobody ever sees a
// completed event, the other user's strategy is untouched and the session keeps its state.
// A turn with a strategy of its own completes with the session settled.
func TestAForeignStrategyFailsTheTurn(t *testing.T) {
	ctx := context.Background()
	validate := func(id string) upstream.ToolCall {
		return upstream.ToolCall{ID: "c1", ServerLabel: "strategy_engine", Name: "validate_strategy", Arguments: `{}`, Output: `{"strategy_id":"` + id + `"}`}
	}
	up := &fakeUpstream{}
	h := newHarness(t, up)
	bobs := &store.Strategy{UserID: "bob", Name: "bob's", Spec: store.JSON(`{"bob":true}`)}
	if err := h.st.UpsertStrategy(ctx, bobs); err != nil {
		t.Fatal(err)
	}
	sess, err := h.orch.CreateSession(ctx, "u1", "", "en")
	if err != nil {
		t.Fatal(err)
	}
	turn := func(strategyID string) []store.Event {
		up.mu.Lock()
		up.scripts, up.calls = []script{{tools: []upstream.ToolCall{validate(strategyID)}, deltas: []string{reply("")}}}, 0
		up.mu.Unlock()
		tr, err := h.orch.HandleMessage(ctx, Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: "Draft a momentum strategy"}})
		if err != nil {
			t.Fatal(err)
		}
		return h.follow(tr.MessageID)
	}

	evs := turn(bobs.ID)
	for _, ev := range evs {
		if ev.Name == events.Completed {
			t.Fatalf("a client saw the refused completed event: %s", ev.Data)
		}
	}
	h.checkEnd(evs[0].MessageID, evs, store.StatusFailed, failure.InternalError, "strategy", sess.ID, nil)
	if stored, _ := h.st.GetStrategy(ctx, bobs.ID, "bob"); stored.Name != "bob's" || string(stored.Spec) != `{"bob":true}` {
		t.Errorf("bob's strategy changed: %+v", stored)
	}
	if got, _ := h.st.GetSession(ctx, sess.ID, "u1"); strings.Contains(string(got.Artifacts), bobs.ID) || got.Title != "" {
		t.Errorf("the refused turn settled the session: title %q, artifacts %s", got.Title, got.Artifacts)
	}

	own := store.NewID()
	evs = turn(own)
	h.checkEnd(evs[0].MessageID, evs, store.StatusCompleted, "", "strategy", sess.ID, nil)
	if _, err := h.st.GetStrategy(ctx, own, "u1"); err != nil {
		t.Errorf("the turn's own strategy: %v", err)
	}
	if got, _ := h.st.GetSession(ctx, sess.ID, "u1"); !strings.Contains(string(got.Artifacts), own) || got.Title == "" {
		t.Errorf("the completed turn did not settle the session: title %q, artifacts %s", got.Title, got.Artifacts)
	}
}
