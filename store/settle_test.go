package store_test

import (
	"errors"
	"fmt"
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

// TestSettleTurnWithAStrategy covers the settlement most strategy-phase turns make: a
// strategy and the session, no move (on PostgreSQL one statement, on SQLite a transaction;
// both must write the same rows and refuse the same way).
func TestSettleTurnWithAStrategy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		_, a := createTurn(t, s, sess, "one", "")
		bobs := &store.Strategy{UserID: "bob", Name: "bob's", Spec: store.JSON(`{"bob":true}`)}
		if err := s.UpsertStrategy(ctx, bobs); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name      string
			owner     string
			strategy  store.Strategy
			wantErr   error
			wantStrat *store.Strategy // the stored row's name, spec, status and backtest status
		}{
			{
				name: "a new strategy gets the insert's defaults", owner: testOwner,
				strategy:  store.Strategy{ID: "new-1", UserID: "alice", SessionID: sess.ID, Name: "Momentum"},
				wantStrat: &store.Strategy{Name: "Momentum", Spec: store.JSON(`{}`), Status: "draft", BacktestStatus: "none"},
			},
			{
				name: "an update keeps what it leaves empty", owner: testOwner,
				strategy:  store.Strategy{ID: "new-1", UserID: "alice", SessionID: sess.ID, Status: "validated"},
				wantStrat: &store.Strategy{Name: "Momentum", Spec: store.JSON(`{}`), Status: "validated", BacktestStatus: "none"},
			},
			{
				name: "an update writes a spec", owner: testOwner,
				strategy:  store.Strategy{ID: "new-1", UserID: "alice", Spec: store.JSON(`{"fast":5}`), BacktestStatus: "running"},
				wantStrat: &store.Strategy{Name: "Momentum", Spec: store.JSON(`{"fast":5}`), Status: "validated", BacktestStatus: "running"},
			},
			{
				name: "another user's strategy is refused whole", owner: testOwner,
				strategy: store.Strategy{ID: bobs.ID, UserID: "alice", SessionID: sess.ID, Name: "taken"},
				wantErr:  store.ErrNotFound,
			},
			{
				name: "another owner writes nothing", owner: "someone-else",
				strategy: store.Strategy{ID: "new-2", UserID: "alice", SessionID: sess.ID, Name: "lost"},
				wantErr:  store.ErrNotOwner,
			},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				title := fmt.Sprintf("settled %d", i)
				next := *sess
				next.Title = title
				strat := tc.strategy
				st := &store.Settlement{MessageID: a.ID, Owner: tc.owner, Session: &next, Strategy: &strat}
				err := s.SettleTurn(ctx, st)
				got, _ := s.GetSession(ctx, sess.ID, "alice")
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("SettleTurn = %v, want %v", err, tc.wantErr)
					}
					if got.Title == title {
						t.Error("a refused settlement wrote the session")
					}
					if stored, _ := s.GetStrategy(ctx, tc.strategy.ID, "bob"); stored != nil && stored.Name != "bob's" {
						t.Errorf("a refused settlement changed bob's strategy: %+v", stored)
					}
					if _, err := s.GetStrategy(ctx, "new-2", "alice"); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("a refused settlement created a strategy: %v", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				stored, err := s.GetStrategy(ctx, tc.strategy.ID, "alice")
				if err != nil {
					t.Fatal(err)
				}
				w := tc.wantStrat
				if stored.Name != w.Name || string(stored.Spec) != string(w.Spec) || stored.Status != w.Status ||
					stored.BacktestStatus != w.BacktestStatus || stored.SessionID != sess.ID {
					t.Errorf("stored strategy %+v, want %+v in session %s", stored, w, sess.ID)
				}
				if strat.Name != stored.Name || string(strat.Spec) != string(stored.Spec) || !strat.UpdatedAt.Equal(stored.UpdatedAt) ||
					!strat.CreatedAt.Equal(stored.CreatedAt) {
					t.Errorf("the settlement wrote back %+v, the table holds %+v", strat, stored)
				}
				if got.Title != title || !got.UpdatedAt.Equal(next.UpdatedAt) {
					t.Errorf("session title %q at %v, want %q at %v", got.Title, got.UpdatedAt, title, next.UpdatedAt)
				}
			})
		}
	})
}
