package store_test

import (
	"fmt"
	"testing"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// TestRecordsGoWithTheTerminalEvent: a turn's MCP calls (each with its attempt) and its
// upstream traces are written by the terminal event's commit, with the turn's outcome, for
// a failed turn as for a completed one; a message another replica owns writes none; the
// traces are the owner's (or an admin's) to read and go with their message.
func TestRecordsGoWithTheTerminalEvent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		_, a := createTurn(t, s, sess, "one", "")
		a.Records = &store.TurnRecords{
			Calls: []store.MCPCall{
				{ToolCall: store.ToolCall{ServerLabel: "strategy_engine", Name: "run_backtest", Arguments: store.JSON(`{}`), Status: store.ToolSuccess, Attempt: 1}},
				{ToolCall: store.ToolCall{ServerLabel: "strategy_engine", Name: "run_backtest", Arguments: store.JSON(`{}`), Status: store.ToolFailure, Error: "cut", Attempt: 2}},
			},
			Traces: []store.Trace{
				{Attempt: 1, Seq: 1, Method: "POST", URL: "http://up/v1/responses", Headers: store.JSON(`{"Authorization":["Bearer [redacted]"]}`), Body: `{"model":"m"}`},
				{Attempt: 2, Seq: 1, Method: "POST", URL: "http://up/v1/responses", Body: `{"model":"m"}`, Truncated: true},
			},
		}
		finish(t, s, a, store.StatusFailed)

		calls, err := s.ListMCPCalls(ctx, a.ID, "alice")
		if err != nil || len(calls) != 2 {
			t.Fatalf("ListMCPCalls = %d, %v; want the 2 calls of the failed turn", len(calls), err)
		}
		for i, c := range calls {
			if c.Attempt != i+1 || c.Outcome != store.StatusFailed || c.SessionID != sess.ID {
				t.Errorf("call %d = %+v, want attempt %d, outcome failed, session %s", i, c, i+1, sess.ID)
			}
		}

		cases := []struct {
			name    string
			user    string
			anyUser bool
			want    int
			err     error
		}{
			{"the owner", "alice", false, 2, nil},
			{"another user", "bob", false, 0, store.ErrNotFound},
			{"an admin", "root", true, 2, nil},
		}
		for _, tc := range cases {
			t.Run("traces read by "+tc.name, func(t *testing.T) {
				got, err := s.ListTraces(ctx, a.ID, tc.user, tc.anyUser)
				if err != tc.err || len(got) != tc.want {
					t.Fatalf("ListTraces = %d, %v; want %d, %v", len(got), err, tc.want, tc.err)
				}
				if tc.want > 0 && (got[0].Attempt != 1 || got[1].Attempt != 2 || !got[1].Truncated || got[0].URL == "" || got[0].SentAt.IsZero()) {
					t.Fatalf("traces %+v", got)
				}
			})
		}

		t.Run("traces read back as written", func(t *testing.T) {
			bodies := []string{`{"input":"\"quoted\" \\ back\\slash, {braces}, 你好 😀"}`, ``}
			for i, body := range bodies {
				_, m := createTurn(t, s, newSession(t, s, "alice"), fmt.Sprintf("trace %d", i), "")
				m.Records = &store.TurnRecords{Traces: []store.Trace{{Attempt: 1, Seq: 1, Method: "POST", URL: "http://up/v1/responses?a=1,2", Body: body}}}
				finish(t, s, m, store.StatusCompleted)
				got, err := s.ListTraces(ctx, m.ID, "alice", false)
				if err != nil || len(got) != 1 || got[0].Body != body || got[0].URL != "http://up/v1/responses?a=1,2" || got[0].Method != "POST" {
					t.Fatalf("ListTraces = %+v, %v; want the body %q as written", got, err, body)
				}
			}
		})

		t.Run("a message this replica does not own records nothing", func(t *testing.T) {
			_, b := createTurn(t, s, newSession(t, s, "alice"), "two", "")
			b.Status, b.LastEventID = store.StatusCompleted, b.LastEventID+1
			b.Records = &store.TurnRecords{Calls: []store.MCPCall{{ToolCall: store.ToolCall{Name: "x", Status: store.ToolSuccess}}}}
			ev := store.Event{MessageID: b.ID, Seq: b.LastEventID, Name: "completed", Data: store.JSON(`{}`), Finish: b}
			lost, err := lostOf(s.CommitEvents(ctx, "another-replica", []store.Event{ev}))
			if err != nil || len(lost) != 1 {
				t.Fatalf("CommitEvents by a non-owner = %v, %v; want the message lost", lost, err)
			}
			if calls, _ := s.ListMCPCalls(ctx, b.ID, "alice"); len(calls) != 0 {
				t.Errorf("a lost message recorded %d calls", len(calls))
			}
		})

		t.Run("traces go with their message", func(t *testing.T) {
			if n, err := s.CountTraces(ctx, a.ID); err != nil || n != 2 {
				t.Fatalf("%d traces before the delete (%v), want 2", n, err)
			}
			if err := s.DeleteSession(ctx, sess.ID); err != nil {
				t.Fatal(err)
			}
			if n, err := s.CountTraces(ctx, a.ID); err != nil || n != 0 {
				t.Fatalf("%d traces left after their message was deleted (%v)", n, err)
			}
		})
	})
}

// TestTracesRideWithAnyEvent: traces on an event that does not end its message are written
// with that event, before the message ends, next to those its finish records; a message
// another replica owns writes none.
func TestTracesRideWithAnyEvent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		_, m := createTurn(t, s, newSession(t, s, "alice"), "early", "")
		early := store.Trace{Attempt: 1, Seq: 1, Method: "POST", URL: "http://up/v1/responses", Body: `{"model":"m","input":"early"}`}
		m.LastEventID++
		delta := store.Event{MessageID: m.ID, Seq: m.LastEventID, Name: "content_delta", Data: store.JSON(`{}`), Traces: []store.Trace{early}}
		if err := commitEvents(ctx, s, []store.Event{delta}); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListTraces(ctx, m.ID, "alice", false)
		if err != nil || len(got) != 1 || got[0].Body != early.Body || got[0].SentAt.IsZero() {
			t.Fatalf("ListTraces while the message streams = %+v, %v; want the early trace", got, err)
		}

		m.Records = &store.TurnRecords{Traces: []store.Trace{{Attempt: 1, Seq: 2, Method: "POST", URL: "http://other/v1/responses", Body: `{}`}}}
		finish(t, s, m, store.StatusCompleted)
		if got, err = s.ListTraces(ctx, m.ID, "alice", false); err != nil || len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 {
			t.Fatalf("ListTraces after the finish = %+v, %v; want the early trace, then the finish's", got, err)
		}

		_, b := createTurn(t, s, newSession(t, s, "alice"), "not mine", "")
		ev := store.Event{MessageID: b.ID, Seq: b.LastEventID + 1, Name: "content_delta", Data: store.JSON(`{}`), Traces: []store.Trace{early}}
		if lost, err := lostOf(s.CommitEvents(ctx, "another-replica", []store.Event{ev})); err != nil || len(lost) != 1 {
			t.Fatalf("CommitEvents by a non-owner = %v, %v; want the message lost", lost, err)
		}
		if n, err := s.CountTraces(ctx, b.ID); err != nil || n != 0 {
			t.Fatalf("a lost message recorded %d traces (%v)", n, err)
		}
	})
}
