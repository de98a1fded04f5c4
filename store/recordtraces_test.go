package store_test

import (
	"testing"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// TestRecordTracesAlone: traces with no event to carry them are written for the owner's
// running message, once even when the write is repeated (a retry after an answer lost on
// the way), and not at all for a message another replica owns or one that has ended.
func TestRecordTracesAlone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		trace := func(seq int) store.Trace {
			return store.Trace{Attempt: 1, Seq: seq, Method: "POST", URL: "http://up/v1/responses", Body: `{"model":"m","input":"x"}`}
		}
		_, running := createTurn(t, s, sess, "running", "")
		_, ended := createTurn(t, s, newSession(t, s, "alice"), "ended", "")
		finish(t, s, ended, store.StatusCompleted)

		cases := []struct {
			name    string
			owner   string
			message string
			traces  []store.Trace
			written bool
			stored  int
		}{
			{"the owner's running message", testOwner, running.ID, []store.Trace{trace(1), trace(2)}, true, 2},
			{"the same again (a retry)", testOwner, running.ID, []store.Trace{trace(2)}, true, 2},
			{"another replica's", "another-replica", running.ID, []store.Trace{trace(3)}, false, 2},
			{"an ended message", testOwner, ended.ID, []store.Trace{trace(1)}, false, 0},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				written, err := s.RecordTraces(ctx, tc.owner, tc.message, tc.traces)
				if err != nil || written != tc.written {
					t.Fatalf("RecordTraces = %v, %v; want %v", written, err, tc.written)
				}
				got, err := s.ListTraces(ctx, tc.message, "alice", false)
				if err != nil || len(got) != tc.stored {
					t.Fatalf("ListTraces = %d, %v; want %d", len(got), err, tc.stored)
				}
			})
		}
	})
}
