package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

func upsert(t *testing.T, s *store.Store, st *store.Strategy) *store.Strategy {
	t.Helper()
	if err := s.UpsertStrategy(t.Context(), st); err != nil {
		t.Fatalf("UpsertStrategy: %v", err)
	}
	return st
}

func TestStrategies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		first := upsert(t, s, &store.Strategy{UserID: "alice", SessionID: sess.ID, Name: "momentum"})

		t.Run("insert fills defaults", func(t *testing.T) {
			if first.ID == "" || first.Status != phases.StrategyDraft || first.BacktestStatus != phases.BacktestNone ||
				string(first.Spec) != "{}" || first.CreatedAt.IsZero() || !first.UpdatedAt.Equal(first.CreatedAt) {
				t.Fatalf("inserted strategy = %+v", first)
			}
			got, err := s.GetStrategy(ctx, first.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, got); diff != "" {
				t.Errorf("GetStrategy (-upserted +got):\n%s", diff)
			}
		})

		// Each update case starts from the stored row and checks what it became.
		spec := store.JSON(`{"symbol": "AAPL", "rules": [{"if": "rsi < 30", "then": "buy"}]}`)
		updates := []struct {
			name   string
			in     store.Strategy
			expect func(before store.Strategy) store.Strategy
		}{
			{"spec and name", store.Strategy{Name: "momentum v2", Spec: spec}, func(b store.Strategy) store.Strategy {
				b.Name, b.Spec = "momentum v2", spec
				return b
			}},
			{"status only keeps name and spec", store.Strategy{Status: phases.StrategyValidated}, func(b store.Strategy) store.Strategy {
				b.Status = phases.StrategyValidated
				return b
			}},
			{"literal null spec keeps the spec", store.Strategy{Spec: store.JSON("null"), BacktestStatus: phases.BacktestRunning},
				func(b store.Strategy) store.Strategy {
					b.BacktestStatus = phases.BacktestRunning
					return b
				}},
			{"session and created_at are kept", store.Strategy{SessionID: newSession(t, s, "alice").ID,
				CreatedAt: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), BacktestStatus: phases.BacktestCompleted},
				func(b store.Strategy) store.Strategy {
					b.BacktestStatus = phases.BacktestCompleted
					return b
				}},
		}
		for _, tc := range updates {
			t.Run("update/"+tc.name, func(t *testing.T) {
				before, err := s.GetStrategy(ctx, first.ID, "alice")
				if err != nil {
					t.Fatal(err)
				}
				in := tc.in
				in.ID, in.UserID = first.ID, "alice"
				upsert(t, s, &in)
				want := tc.expect(*before)
				if !in.UpdatedAt.After(before.UpdatedAt) {
					t.Errorf("UpdatedAt %v not after %v", in.UpdatedAt, before.UpdatedAt)
				}
				want.UpdatedAt = in.UpdatedAt
				if diff := cmp.Diff(want, in); diff != "" {
					t.Errorf("written back (-want +got):\n%s", diff)
				}
				got, err := s.GetStrategy(ctx, first.ID, "alice")
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(&want, got); diff != "" {
					t.Errorf("stored (-want +got):\n%s", diff)
				}
			})
		}

		t.Run("insert with a chosen id", func(t *testing.T) {
			st := upsert(t, s, &store.Strategy{ID: "tool-made-id", UserID: "alice", SessionID: sess.ID,
				Status: phases.StrategyValidated, Spec: spec})
			got, err := s.GetStrategy(ctx, "tool-made-id", "alice")
			if err != nil || got.Status != phases.StrategyValidated || got.BacktestStatus != phases.BacktestNone {
				t.Fatalf("GetStrategy = %+v, %v", got, err)
			}
			if diff := cmp.Diff(st, got); diff != "" {
				t.Errorf("GetStrategy (-upserted +got):\n%s", diff)
			}
		})

		refused := []struct {
			name    string
			in      store.Strategy
			wantErr error // nil: any error
		}{
			{"another user's id", store.Strategy{ID: first.ID, UserID: "bob", Name: "stolen", Status: "confirmed"}, store.ErrNotFound},
			{"another user's session", store.Strategy{UserID: "bob", SessionID: sess.ID, Name: "intruder"}, store.ErrNotFound},
			{"missing session", store.Strategy{UserID: "alice", SessionID: "no-such-session"}, store.ErrNotFound},
			{"no user", store.Strategy{Name: "orphan"}, nil},
			{"invalid spec", store.Strategy{UserID: "alice", Spec: store.JSON(`{"a":`)}, nil},
		}
		for _, tc := range refused {
			t.Run("refused/"+tc.name, func(t *testing.T) {
				before, err := s.GetStrategy(ctx, first.ID, "alice")
				if err != nil {
					t.Fatal(err)
				}
				in := tc.in
				err = s.UpsertStrategy(ctx, &in)
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("UpsertStrategy err = %v, want %v", err, cmpOrAny(tc.wantErr))
				}
				after, err := s.GetStrategy(ctx, first.ID, "alice")
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("strategy changed by a refused upsert (-before +after):\n%s", diff)
				}
			})
		}

		t.Run("latest of the session", func(t *testing.T) {
			time.Sleep(time.Millisecond)
			newest := upsert(t, s, &store.Strategy{UserID: "alice", SessionID: sess.ID, Name: "mean reversion"})
			// Updating an older strategy does not make it the latest.
			upsert(t, s, &store.Strategy{ID: first.ID, UserID: "alice", Status: phases.StrategyConfirmed})
			got, err := s.LatestStrategy(ctx, sess.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != newest.ID {
				t.Errorf("LatestStrategy = %s (%s), want %s", got.ID, got.Name, newest.ID)
			}
		})

		getCases := []struct {
			name string
			get  func() (*store.Strategy, error)
		}{
			{"get: other user", func() (*store.Strategy, error) { return s.GetStrategy(ctx, first.ID, "bob") }},
			{"get: missing id", func() (*store.Strategy, error) { return s.GetStrategy(ctx, "no-such-id", "alice") }},
			{"latest: other user", func() (*store.Strategy, error) { return s.LatestStrategy(ctx, sess.ID, "bob") }},
			{"latest: session without strategies", func() (*store.Strategy, error) {
				return s.LatestStrategy(ctx, newSession(t, s, "alice").ID, "alice")
			}},
			{"latest: missing session", func() (*store.Strategy, error) { return s.LatestStrategy(ctx, "no-such-session", "alice") }},
		}
		for _, tc := range getCases {
			t.Run(tc.name, func(t *testing.T) {
				if got, err := tc.get(); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("= %+v, %v; want ErrNotFound", got, err)
				}
			})
		}

		t.Run("JSON hides the owner", func(t *testing.T) {
			b, err := json.Marshal(first)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]any
			if err := json.Unmarshal(b, &fields); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"id", "session_id", "name", "spec", "status", "backtest_status", "created_at", "updated_at"} {
				if _, ok := fields[k]; !ok {
					t.Errorf("JSON lacks %q: %s", k, b)
				}
			}
			if _, ok := fields["user_id"]; ok || len(fields) != 8 {
				t.Errorf("JSON = %s, want exactly the 8 public fields", b)
			}
		})
	})
}

// TestUpsertStrategyConcurrent upserts one new id from several goroutines: one inserts,
// the others update the row it made, and none fails.
func TestUpsertStrategyConcurrent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				st := &store.Strategy{ID: "shared-id", UserID: "alice", Name: fmt.Sprintf("writer %d", i)}
				errs[i] = s.UpsertStrategy(t.Context(), st)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
		if _, err := s.GetStrategy(t.Context(), "shared-id", "alice"); err != nil {
			t.Errorf("GetStrategy: %v", err)
		}
	})
}
