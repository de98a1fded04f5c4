package store_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

func TestMCPCalls(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		_, a1 := createTurn(t, s, sess, "one", "")
		finish(t, s, a1, store.StatusCompleted)
		_, a2 := createTurn(t, s, sess, "two", "")
		other := newSession(t, s, "alice")
		_, aOther := createTurn(t, s, other, "elsewhere", "")

		calls := []store.MCPCall{
			{MessageID: a1.ID, ServerLabel: "quant", Name: "validate_strategy",
				Arguments: store.JSON(`{"symbol": "AAPL", "window": [1, 2]}`), Output: `{"strategy_id": "s1"}`,
				Status: "completed", DurationMS: 120},
			{MessageID: a1.ID, SessionID: sess.ID, ServerLabel: "quant", Name: "run_backtest",
				Error: "timeout", Status: "failed", DurationMS: 3000},
			{MessageID: a2.ID, Name: "run_backtest", Status: "completed"},
		}
		if err := s.InsertMCPCalls(ctx, calls); err != nil {
			t.Fatalf("InsertMCPCalls: %v", err)
		}

		t.Run("round trip in order", func(t *testing.T) {
			for _, c := range calls {
				if c.ID == "" || c.SessionID != sess.ID || c.CreatedAt.IsZero() {
					t.Fatalf("call not filled in: %+v", c)
				}
			}
			got, err := s.ListMCPCalls(ctx, a1.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(calls[:2], got, jsonEqual); diff != "" {
				t.Errorf("ListMCPCalls (-inserted +got):\n%s", diff)
			}
		})

		listCases := []struct {
			name, messageID, user string
			want                  int
			wantErr               error
		}{
			{"owner, second message", a2.ID, "alice", 1, nil},
			{"owned message without calls", aOther.ID, "alice", 0, nil},
			{"other user", a1.ID, "bob", 0, store.ErrNotFound},
			{"missing message", "no-such-id", "alice", 0, store.ErrNotFound},
		}
		for _, tc := range listCases {
			t.Run("list/"+tc.name, func(t *testing.T) {
				got, err := s.ListMCPCalls(ctx, tc.messageID, tc.user)
				if !errors.Is(err, tc.wantErr) || len(got) != tc.want {
					t.Fatalf("ListMCPCalls = %d calls, %v; want %d, %v", len(got), err, tc.want, tc.wantErr)
				}
			})
		}

		badCases := []struct {
			name    string
			calls   []store.MCPCall
			wantErr error // nil: any error
		}{
			{"missing message fails the whole batch", []store.MCPCall{
				{MessageID: aOther.ID, Name: "first", Status: "completed"},
				{MessageID: "no-such-message", Name: "second", Status: "completed"},
			}, store.ErrNotFound},
			{"session of another message", []store.MCPCall{
				{MessageID: aOther.ID, SessionID: sess.ID, Name: "mismatch", Status: "completed"},
			}, nil},
			{"no name", []store.MCPCall{{MessageID: aOther.ID, Status: "completed"}}, nil},
			{"no status", []store.MCPCall{{MessageID: aOther.ID, Name: "x"}}, nil},
			{"invalid arguments", []store.MCPCall{
				{MessageID: aOther.ID, Name: "x", Status: "completed", Arguments: store.JSON(`{`)},
			}, nil},
		}
		for _, tc := range badCases {
			t.Run("refused/"+tc.name, func(t *testing.T) {
				err := s.InsertMCPCalls(ctx, tc.calls)
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("InsertMCPCalls err = %v, want %v", err, cmpOrAny(tc.wantErr))
				}
				got, err := s.ListMCPCalls(ctx, aOther.ID, "alice")
				if err != nil || len(got) != 0 {
					t.Errorf("after a refused batch: %d calls, %v; want none stored", len(got), err)
				}
			})
		}

		t.Run("empty batch", func(t *testing.T) {
			if err := s.InsertMCPCalls(ctx, nil); err != nil {
				t.Errorf("InsertMCPCalls(nil) = %v", err)
			}
		})
	})
}

// cmpOrAny names the wanted error in failure messages, "any error" for nil.
func cmpOrAny(err error) any {
	if err == nil {
		return "any error"
	}
	return err
}
