package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// moved returns a copy of sess in phase to, with artifacts and metadata a move would carry.
func moved(sess *store.Session, to string) *store.Session {
	next := *sess
	next.Phase = to
	next.Artifacts = store.JSON(`{"` + sess.Phase + `": {"done": true}}`)
	next.Metadata = store.JSON(`{"carryover": "from ` + sess.Phase + `"}`)
	return &next
}

func TestMovePhase(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		_, reply := createTurn(t, s, sess, "confirm", "")
		finish(t, s, reply, store.StatusCompleted)
		sess.PreviousResponseID = "resp_strategy_chain"
		if err := s.UpdateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}

		// state asserts the stored phase and the number of transitions of sess.
		state := func(t *testing.T, wantPhase string, wantMoves int) []store.Transition {
			t.Helper()
			got, err := s.GetSession(ctx, sess.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			moves, err := s.ListTransitions(ctx, sess.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if got.Phase != wantPhase || len(moves) != wantMoves {
				t.Fatalf("stored phase %q with %d transitions, want %q with %d", got.Phase, len(moves), wantPhase, wantMoves)
			}
			return moves
		}

		t.Run("writes the session and the transition", func(t *testing.T) {
			next := moved(sess, "stress_test")
			next.Status, next.PreviousResponseID = "active", "" // a new phase starts a fresh chain
			tr := &store.Transition{FromPhase: "strategy", ToPhase: "stress_test", Reason: "strategy confirmed",
				MessageID: reply.ID, Metadata: store.JSON(`{"fields": ["strategy_status"], "tool_call": "c1"}`)}
			if err := s.MovePhase(ctx, next, tr); err != nil {
				t.Fatal(err)
			}
			if tr.ID == "" || tr.SessionID != sess.ID || !tr.CreatedAt.Equal(next.UpdatedAt) || !next.UpdatedAt.After(sess.UpdatedAt) {
				t.Errorf("not filled in: transition %+v, session updated_at %v", tr, next.UpdatedAt)
			}
			got, err := s.GetSession(ctx, sess.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(next, got); diff != "" {
				t.Errorf("session (-moved +stored):\n%s", diff)
			}
			moves := state(t, "stress_test", 1)
			if diff := cmp.Diff(*tr, moves[0]); diff != "" {
				t.Errorf("transition (-written +listed):\n%s", diff)
			}
			*sess = *got
		})

		refused := []struct {
			name    string
			sess    func() *store.Session
			tr      store.Transition
			wantErr error // nil: any error
		}{
			{"stale from phase", func() *store.Session { return moved(sess, "deployment") },
				store.Transition{FromPhase: "strategy", ToPhase: "deployment"}, store.ErrPhaseChanged},
			{"unknown message rolls the session back", func() *store.Session { return moved(sess, "deployment") },
				store.Transition{FromPhase: "stress_test", ToPhase: "deployment", MessageID: "no-such-message"}, nil},
			{"invalid metadata", func() *store.Session { return moved(sess, "deployment") },
				store.Transition{FromPhase: "stress_test", ToPhase: "deployment", Metadata: store.JSON(`[`)}, nil},
			{"other user's session", func() *store.Session {
				m := moved(sess, "deployment")
				m.UserID = "bob"
				return m
			}, store.Transition{FromPhase: "stress_test", ToPhase: "deployment"}, store.ErrNotFound},
			{"missing session", func() *store.Session {
				m := moved(sess, "deployment")
				m.ID = "no-such-session"
				return m
			}, store.Transition{FromPhase: "stress_test", ToPhase: "deployment"}, store.ErrNotFound},
			{"session phase is not the target", func() *store.Session { return moved(sess, "completed") },
				store.Transition{FromPhase: "stress_test", ToPhase: "deployment"}, nil},
			{"transition of another session", func() *store.Session { return moved(sess, "deployment") },
				store.Transition{SessionID: "other", FromPhase: "stress_test", ToPhase: "deployment"}, nil},
		}
		for _, tc := range refused {
			t.Run("refused/"+tc.name, func(t *testing.T) {
				tr := tc.tr
				err := s.MovePhase(ctx, tc.sess(), &tr)
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("MovePhase err = %v, want %v", err, cmpOrAny(tc.wantErr))
				}
				t.Logf("refused: %v", err)
				state(t, "stress_test", 1)
				got, err := s.GetSession(ctx, sess.ID, "alice")
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(sess, got); diff != "" {
					t.Errorf("session changed by a refused move (-before +after):\n%s", diff)
				}
			})
		}

		t.Run("second move lists oldest first", func(t *testing.T) {
			tr := &store.Transition{FromPhase: "stress_test", ToPhase: "strategy", Reason: "revise"}
			if err := s.MovePhase(ctx, moved(sess, "strategy"), tr); err != nil {
				t.Fatal(err)
			}
			moves := state(t, "strategy", 2)
			if moves[1].ID != tr.ID || moves[1].MessageID != "" || moves[1].Metadata != nil {
				t.Errorf("second transition = %+v, want %s without message or metadata", moves[1], tr.ID)
			}
		})

		t.Run("JSON names of the route", func(t *testing.T) {
			moves := state(t, "strategy", 2)
			b, err := json.Marshal(moves[0])
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]any
			if err := json.Unmarshal(b, &fields); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for k := range fields {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			want := []string{"created_at", "from", "id", "message_id", "metadata", "reason", "to"}
			if diff := cmp.Diff(want, keys); diff != "" {
				t.Errorf("JSON keys (-want +got):\n%s", diff)
			}
		})

		listCases := []struct {
			name, sessionID, user string
			wantErr               error
		}{
			{"other user", sess.ID, "bob", store.ErrNotFound},
			{"missing session", "no-such-session", "alice", store.ErrNotFound},
		}
		for _, tc := range listCases {
			t.Run("list/"+tc.name, func(t *testing.T) {
				if _, err := s.ListTransitions(ctx, tc.sessionID, tc.user); !errors.Is(err, tc.wantErr) {
					t.Fatalf("ListTransitions err = %v, want %v", err, tc.wantErr)
				}
			})
		}
		t.Run("list/session that never moved", func(t *testing.T) {
			fresh := newSession(t, s, "alice")
			got, err := s.ListTransitions(ctx, fresh.ID, "alice")
			if err != nil || len(got) != 0 {
				t.Fatalf("ListTransitions = %v, %v; want empty", got, err)
			}
		})
	})
}

// TestMovePhaseConcurrent races several moves out of the same phase: exactly one wins and
// the others see ErrPhaseChanged.
func TestMovePhaseConcurrent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const movers = 8
		sess := newSession(t, s, "alice")
		errs := make([]error, movers)
		var wg sync.WaitGroup
		for i := range movers {
			wg.Go(func() {
				tr := &store.Transition{FromPhase: "strategy", ToPhase: "stress_test"}
				errs[i] = s.MovePhase(t.Context(), moved(sess, "stress_test"), tr)
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrPhaseChanged):
				t.Errorf("MovePhase err = %v, want nil or ErrPhaseChanged", err)
			}
		}
		moves, err := s.ListTransitions(t.Context(), sess.ID, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if won != 1 || len(moves) != 1 {
			t.Errorf("%d moves won, %d transitions stored; want 1 and 1", won, len(moves))
		}
	})
}
