package store_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// A turn's MCP calls are written with its terminal event (TurnRecords) and listed per
// message, in the order they were made, to the message's owner only.
func TestMCPCalls(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		_, a1 := createTurn(t, s, sess, "one", "")
		a1.Records = &store.TurnRecords{Calls: []store.MCPCall{
			{ToolCall: store.ToolCall{ServerLabel: "quant", Name: "validate_strategy",
				Arguments: store.JSON(`{"symbol": "AAPL", "window": [1, 2]}`), Output: `{"strategy_id": "s1"}`,
				Status: store.ToolSuccess, DurationMS: 120}},
			{ToolCall: store.ToolCall{ServerLabel: "quant", Name: "run_backtest",
				Error: "timeout", Status: store.ToolFailure, DurationMS: 3000}},
		}}
		finish(t, s, a1, store.StatusCompleted)
		_, a2 := createTurn(t, s, sess, "two", "")
		a2.Records = &store.TurnRecords{Calls: []store.MCPCall{{ToolCall: store.ToolCall{Name: "run_backtest", Status: store.ToolSuccess}}}}
		finish(t, s, a2, store.StatusCompleted)
		other := newSession(t, s, "alice")
		_, aOther := createTurn(t, s, other, "elsewhere", "")

		t.Run("round trip in order", func(t *testing.T) {
			calls := a1.Records.Calls
			for _, c := range calls {
				if c.ID == "" || c.SessionID != sess.ID || c.CreatedAt.IsZero() || c.Attempt != 1 || c.Outcome != store.StatusCompleted {
					t.Fatalf("call not filled in: %+v", c)
				}
			}
			got, err := s.ListMCPCalls(ctx, a1.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(calls, got); diff != "" {
				t.Errorf("ListMCPCalls (-recorded +got):\n%s", diff)
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
			name string
			call store.MCPCall
		}{
			{"no name", store.MCPCall{ToolCall: store.ToolCall{Status: store.ToolSuccess}}},
			{"no status", store.MCPCall{ToolCall: store.ToolCall{Name: "x"}}},
			{"invalid arguments", store.MCPCall{ToolCall: store.ToolCall{Name: "x", Status: store.ToolSuccess, Arguments: store.JSON(`{`)}}},
		}
		for _, tc := range badCases {
			t.Run("refused/"+tc.name, func(t *testing.T) {
				m := *aOther
				m.Status, m.Records = store.StatusCompleted, &store.TurnRecords{Calls: []store.MCPCall{tc.call}}
				ev := store.Event{MessageID: m.ID, Seq: m.LastEventID + 1, Name: "completed", Data: store.JSON(`{}`), Finish: &m}
				if _, err := s.CommitEvents(ctx, testOwner, []store.Event{ev}); err == nil {
					t.Fatal("CommitEvents with a bad call = nil, want an error")
				}
				got, err := s.ListMCPCalls(ctx, aOther.ID, "alice")
				if err != nil || len(got) != 0 {
					t.Errorf("after a refused commit: %d calls, %v; want none stored", len(got), err)
				}
				if msg, _ := s.GetMessage(ctx, aOther.ID, "alice"); msg.Status == store.StatusCompleted {
					t.Error("the refused commit ended the message")
				}
			})
		}
	})
}

// cmpOrAny names the wanted error in failure messages, "any error" for nil.
func cmpOrAny(err error) any {
	if err == nil {
		return "any error"
	}
	return err
}
