package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

func TestSettleTurn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		_, a := createTurn(t, s, sess, "one", "")

		t.Run("another owner writes nothing", func(t *testing.T) {
			renamed := *sess
			renamed.Title = "not written"
			st := &store.Settlement{MessageID: a.ID, Owner: "someone-else", Session: &renamed}
			if err := s.SettleTurn(ctx, st); !errors.Is(err, store.ErrNotOwner) {
				t.Fatalf("SettleTurn = %v, want ErrNotOwner", err)
			}
			if got, _ := s.GetSession(ctx, sess.ID, "alice"); got.Title == "not written" {
				t.Error("a fenced settlement wrote the session")
			}
		})

		t.Run("strategy, session and move in one go", func(t *testing.T) {
			moved := *sess
			moved.Phase = "stress_test"
			moved.Artifacts = store.JSON(`{"strategy":{"strategy_id":"s-1"}}`)
			st := &store.Settlement{
				MessageID: a.ID, Owner: testOwner, Session: &moved,
				Move:     &store.Transition{FromPhase: "strategy", ToPhase: "stress_test", Reason: "done", MessageID: a.ID},
				Strategy: &store.Strategy{ID: "s-1", UserID: "alice", SessionID: sess.ID, Name: "BTC"},
			}
			if err := s.SettleTurn(ctx, st); err != nil {
				t.Fatal(err)
			}
			got, _ := s.GetSession(ctx, sess.ID, "alice")
			trs, _ := s.ListTransitions(ctx, sess.ID, "alice")
			strat, _ := s.GetStrategy(ctx, "s-1", "alice")
			if got.Phase != "stress_test" || len(trs) != 1 || strat == nil {
				t.Fatalf("session %s, %d transitions, strategy %v", got.Phase, len(trs), strat)
			}
		})

		t.Run("a move from a phase the session left is refused whole", func(t *testing.T) {
			stale := *sess
			stale.Phase = "stress_test"
			st := &store.Settlement{
				MessageID: a.ID, Owner: testOwner, Session: &stale,
				Move: &store.Transition{FromPhase: "strategy", ToPhase: "stress_test", CreatedAt: time.Now()},
			}
			if err := s.SettleTurn(ctx, st); !errors.Is(err, store.ErrPhaseChanged) {
				t.Fatalf("SettleTurn = %v, want ErrPhaseChanged", err)
			}
			if trs, _ := s.ListTransitions(ctx, sess.ID, "alice"); len(trs) != 1 {
				t.Errorf("a refused settlement wrote a transition: %d", len(trs))
			}
		})
	})
}
