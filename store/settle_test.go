package store_test

import (
	"errors"
	"fmt"
	"slices"
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

// TestSettleTurnWithAStrategy covers SettleTurn with a strategy and the session and no move
// (a turn's commit writes that settlement itself, TestCommitSettlesTheTurn; SettleTurn
// must write the same rows and refuse the same way on both databases).
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

// TestCommitSettlesTheTurn runs a completed turn's settlement through the commit that
// finishes its message, as the event log writes it: the same rows and refusals as
// SettleTurn, on both databases, in one commit with the terminal event. A refused
// settlement leaves its message running and none of its events written, and the rest of
// the batch goes in.
func TestCommitSettlesTheTurn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		bobSession := newSession(t, s, "bob")
		bobs := &store.Strategy{UserID: "bob", Name: "bob's", Spec: store.JSON(`{"bob":true}`)}
		if err := s.UpsertStrategy(ctx, bobs); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name      string
			owner     string
			strategy  *store.Strategy
			refused   bool
			lost      bool
			wantStrat *store.Strategy // the stored row's name, spec, status and backtest status
		}{
			{
				name: "a new strategy gets the insert's defaults", owner: testOwner,
				strategy:  &store.Strategy{ID: "new-1", UserID: "alice", SessionID: sess.ID, Name: "Momentum"},
				wantStrat: &store.Strategy{Name: "Momentum", Spec: store.JSON(`{}`), Status: "draft", BacktestStatus: "none"},
			},
			{
				name: "an update keeps what it leaves empty", owner: testOwner,
				strategy:  &store.Strategy{ID: "new-1", UserID: "alice", SessionID: sess.ID, Status: "validated"},
				wantStrat: &store.Strategy{Name: "Momentum", Spec: store.JSON(`{}`), Status: "validated", BacktestStatus: "none"},
			},
			{
				name: "an update writes a spec", owner: testOwner,
				strategy:  &store.Strategy{ID: "new-1", UserID: "alice", Spec: store.JSON(`{"fast":5}`), BacktestStatus: "running"},
				wantStrat: &store.Strategy{Name: "Momentum", Spec: store.JSON(`{"fast":5}`), Status: "validated", BacktestStatus: "running"},
			},
			{
				name: "a strategy without an id gets one", owner: testOwner,
				strategy:  &store.Strategy{UserID: "alice", SessionID: sess.ID, Name: "Fresh", Status: "validated"},
				wantStrat: &store.Strategy{Name: "Fresh", Spec: store.JSON(`{}`), Status: "validated", BacktestStatus: "none"},
			},
			{name: "the session alone", owner: testOwner},
			{
				name: "another user's strategy is refused whole", owner: testOwner, refused: true,
				strategy: &store.Strategy{ID: bobs.ID, UserID: "alice", SessionID: sess.ID, Name: "taken"},
			},
			{
				name: "a new strategy in another user's session is refused whole", owner: testOwner, refused: true,
				strategy: &store.Strategy{ID: "new-2", UserID: "alice", SessionID: bobSession.ID, Name: "smuggled"},
			},
			{
				name: "another owner writes nothing", owner: "someone-else", lost: true,
				strategy: &store.Strategy{ID: "new-3", UserID: "alice", SessionID: sess.ID, Name: "lost"},
			},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				title := fmt.Sprintf("settled %d", i)
				_, a := createTurn(t, s, sess, title, "")
				_, other := createTurn(t, s, newSession(t, s, "carol"), title, "") // shares the batch
				next := *sess
				next.Title = title
				outcome := *a
				outcome.Status, outcome.Content = store.StatusCompleted, "reply "+title
				outcome.Settlement = &store.Settlement{Session: &next, Strategy: tc.strategy}
				batch := append(events(a.ID, 1, 2), store.Event{MessageID: a.ID, Seq: 3, Name: "completed", Data: store.JSON(`{}`), Finish: &outcome})
				batch = append(batch, events(other.ID, 1, 1)...)
				un, err := s.CommitEvents(ctx, tc.owner, batch)
				if err != nil {
					t.Fatal(err)
				}
				wantRefused, wantLost := []string(nil), []string(nil)
				switch {
				case tc.refused:
					wantRefused = []string{a.ID}
				case tc.lost:
					wantLost = []string{a.ID, other.ID}
				}
				if !slices.Equal(un.Refused, wantRefused) || !slices.Equal(un.Lost, wantLost) {
					t.Fatalf("CommitEvents = refused %v, lost %v; want %v, %v", un.Refused, un.Lost, wantRefused, wantLost)
				}
				if got, _ := s.ListEvents(ctx, other.ID, 0, 0); !tc.lost && len(got) != 1 {
					t.Errorf("the other message of the batch has %d events, want 1", len(got))
				}
				got, _ := s.GetSession(ctx, sess.ID, "alice")
				msg, _ := s.GetMessage(ctx, a.ID, "alice")
				logged, _ := s.ListEvents(ctx, a.ID, 0, 0)
				if tc.refused || tc.lost {
					if got.Title == title || msg.Status == store.StatusCompleted || len(logged) != 0 {
						t.Errorf("an unwritten settlement left session %q, message %s, %d events", got.Title, msg.Status, len(logged))
					}
					if stored, _ := s.GetStrategy(ctx, bobs.ID, "bob"); stored.Name != "bob's" {
						t.Errorf("bob's strategy changed: %+v", stored)
					}
					if _, err := s.GetStrategy(ctx, tc.strategy.ID, "alice"); tc.strategy.ID != bobs.ID && !errors.Is(err, store.ErrNotFound) {
						t.Errorf("an unwritten settlement created strategy %s: %v", tc.strategy.ID, err)
					}
					if tc.refused { // the turn ends otherwise, freeing the session for the next case
						finish(t, s, msg, store.StatusFailed)
					} else if _, err := s.CommitEvents(ctx, testOwner, []store.Event{{MessageID: a.ID, Seq: 1, Name: "error", Data: store.JSON(`{}`), Finish: &store.Message{ID: a.ID, Status: store.StatusFailed}}}); err != nil {
						t.Fatal(err)
					}
					return
				}
				if got.Title != title || msg.Status != store.StatusCompleted || msg.Content != "reply "+title || len(logged) != 3 {
					t.Fatalf("session %q, message %s %q, %d events: want %q, completed, 3", got.Title, msg.Status, msg.Content, len(logged), title)
				}
				if tc.wantStrat == nil {
					return
				}
				stored, err := s.GetStrategy(ctx, tc.strategy.ID, "alice")
				if err != nil {
					t.Fatalf("strategy %q: %v", tc.strategy.ID, err)
				}
				w := tc.wantStrat
				if stored.Name != w.Name || string(stored.Spec) != string(w.Spec) || stored.Status != w.Status ||
					stored.BacktestStatus != w.BacktestStatus || stored.SessionID != sess.ID {
					t.Errorf("stored strategy %+v, want %+v in session %s", stored, w, sess.ID)
				}
			})
		}
	})
}
