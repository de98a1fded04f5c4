package store_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// events returns events seq from..to (inclusive) of one message.
func events(messageID string, from, to int64) []store.Event {
	var out []store.Event
	for seq := from; seq <= to; seq++ {
		out = append(out, store.Event{MessageID: messageID, Seq: seq, Name: "content_delta",
			Data: store.JSON(fmt.Sprintf(`{"seq": %d, "delta": "d%d"}`, seq, seq))})
	}
	return out
}

func seqs(evs []store.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for seq := from; seq <= to; seq++ {
		out = append(out, seq)
	}
	return out
}

func TestEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		_, a := createTurn(t, s, sess, "one", "")

		for _, batch := range [][]store.Event{events(a.ID, 1, 3), events(a.ID, 4, 4), events(a.ID, 5, 6)} {
			if err := commitEvents(ctx, s, batch); err != nil {
				t.Fatalf("CommitEvents: %v", err)
			}
		}
		if err := commitEvents(ctx, s, nil); err != nil {
			t.Fatalf("CommitEvents(nil): %v", err)
		}

		listCases := []struct {
			name     string
			afterSeq int64
			limit    int
			want     []int64
		}{
			{"all", 0, 0, seqRange(1, 6)},
			{"after 2", 2, 0, seqRange(3, 6)},
			{"limit 2", 0, 2, seqRange(1, 2)},
			{"after 3 limit 2", 3, 2, seqRange(4, 5)},
			{"after the last", 6, 0, nil},
			{"negative limit means all", 4, -1, seqRange(5, 6)},
		}
		for _, tc := range listCases {
			t.Run("list/"+tc.name, func(t *testing.T) {
				got, err := s.ListEvents(ctx, a.ID, tc.afterSeq, tc.limit)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, seqs(got)); diff != "" {
					t.Errorf("seqs (-want +got):\n%s", diff)
				}
			})
		}

		t.Run("round trip, byte for byte", func(t *testing.T) {
			want := events(a.ID, 7, 8)
			want[0].Data = store.JSON(`{"z":1,  "a":"<b>\u00e9"}`) // key order, spacing and escapes kept
			want[1].Data = nil
			want[1].Name = "heartbeat"
			if err := commitEvents(ctx, s, want); err != nil {
				t.Fatal(err)
			}
			got, err := s.ListEvents(ctx, a.ID, 6, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-appended +listed):\n%s", diff)
			}
		})

		t.Run("a repeated seq fails the whole batch", func(t *testing.T) {
			batch := append(events(a.ID, 9, 9), events(a.ID, 3, 3)...)
			if err := commitEvents(ctx, s, batch); err == nil {
				t.Fatal("CommitEvents with a repeated seq = nil, want an error")
			}
			got, _ := s.ListEvents(ctx, a.ID, 8, 0)
			if len(got) != 0 {
				t.Errorf("seqs %v written by a failed batch", seqs(got))
			}
		})

		t.Run("unknown message is reported lost", func(t *testing.T) {
			lost, err := lostOf(s.CommitEvents(ctx, testOwner, events("no-such-message", 1, 1)))
			if err != nil || !slices.Equal(lost, []string{"no-such-message"}) {
				t.Errorf("CommitEvents for a missing message = lost %v, %v; want it lost", lost, err)
			}
			if got, _ := s.ListEvents(ctx, "no-such-message", 0, 0); len(got) != 0 {
				t.Errorf("events of a missing message stored: %v", seqs(got))
			}
		})

		t.Run("a finish with a running status is refused", func(t *testing.T) {
			for _, status := range []string{"", store.StatusStreaming} {
				ev := events(a.ID, 9, 9)[0]
				ev.Finish = &store.Message{Status: status, Content: "half"}
				if _, err := s.CommitEvents(ctx, testOwner, []store.Event{ev}); err == nil {
					t.Errorf("CommitEvents with a finish of status %q = nil, want an error", status)
				}
			}
			if got, _ := s.ListEvents(ctx, a.ID, 8, 0); len(got) != 0 {
				t.Errorf("seqs %v written by a refused finish", seqs(got))
			}
		})

		t.Run("last_event_id follows", func(t *testing.T) {
			got, err := s.GetMessage(ctx, a.ID, "alice")
			if err != nil || got.LastEventID != 8 {
				t.Fatalf("LastEventID = %d, %v; want 8", got.LastEventID, err)
			}
		})

		t.Run("several messages in one batch", func(t *testing.T) {
			_, b := createTurn(t, s, newSession(t, s, "alice"), "b", "")
			_, c := createTurn(t, s, newSession(t, s, "bob"), "c", "")
			batch := append(events(b.ID, 1, 2), events(c.ID, 1, 3)...)
			if err := commitEvents(ctx, s, batch); err != nil {
				t.Fatal(err)
			}
			for id, want := range map[string][]int64{b.ID: seqRange(1, 2), c.ID: seqRange(1, 3)} {
				got, err := s.ListEvents(ctx, id, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, seqs(got)); diff != "" {
					t.Errorf("message %s (-want +got):\n%s", id, diff)
				}
			}
		})

		t.Run("batch beyond the parameter limit", func(t *testing.T) {
			// 14000 rows × 5 columns = 70000 parameters: more than PostgreSQL's 65535 and
			// SQLite's 32766 per statement, so CommitEvents must split.
			const n = 14000
			_, big := createTurn(t, s, newSession(t, s, "alice"), "big", "")
			if err := commitEvents(ctx, s, events(big.ID, 1, n)); err != nil {
				t.Fatal(err)
			}
			got, err := s.ListEvents(ctx, big.ID, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(seqRange(1, n), seqs(got)); diff != "" {
				t.Errorf("seqs (-want +got):\n%s", diff)
			}
			m, err := s.GetMessage(ctx, big.ID, "alice")
			if err != nil || m.LastEventID != n {
				t.Errorf("LastEventID = %d, %v; want %d", m.LastEventID, err, n)
			}
		})

	})
}

func TestEventsKeepLogAfterError(t *testing.T) {
	// A failed append must leave the store usable (the transaction is rolled back, the
	// single SQLite writer connection is released).
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		_, a := createTurn(t, s, newSession(t, s, "alice"), "x", "")
		bad := events(a.ID, 1, 1)
		bad[0].Data = store.JSON("{not json")
		if err := commitEvents(t.Context(), s, bad); err == nil {
			t.Fatal("CommitEvents with invalid JSON = nil, want an error")
		}
		if err := commitEvents(t.Context(), s, events(a.ID, 1, 2)); err != nil {
			t.Fatalf("CommitEvents after a failure: %v", err)
		}
		got, err := s.ListEvents(t.Context(), a.ID, 0, 0)
		if err != nil || len(got) != 2 {
			t.Fatalf("ListEvents = %v, %v; want seqs 1 and 2", seqs(got), err)
		}
	})
}

// TestCommitPlanProbesRunningMessages checks the plan PostgreSQL keeps for the event log's
// commit on a fresh database: it must find the batch's messages, and the sessions and
// strategies a settlement names, through an index, not by reading a whole table (which it
// would then do on every commit as the table grew, until an ANALYZE replanned it).
func TestCommitPlanProbesRunningMessages(t *testing.T) {
	s := storetest.Postgres(t)
	for _, kind := range store.CommitKinds {
		plan, err := s.ExplainCommitPlan(t.Context(), kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"messages", "sessions", "strategies"} {
			if strings.Contains(plan, "Seq Scan on "+table) || !strings.Contains(plan, "Index Scan") {
				t.Errorf("the generic plan of the commit (%s) reads %s without an index:\n%s", kind, table, plan)
			}
		}
	}
}

// TestCommitIsPlannedOnce runs each commit statement as the event log runs it,
// prepared on a connection, and checks that PostgreSQL settles on their generic plans after
// the custom plans it tries first: a statement it kept planning anew cost each commit
// 0.6 ms of the database's CPU, more than the commit itself.
func TestCommitIsPlannedOnce(t *testing.T) {
	s := storetest.Postgres(t)
	for _, kind := range store.CommitKinds {
		generic, custom, err := s.CommitPlans(t.Context(), kind, 12)
		if err != nil {
			t.Fatal(err)
		}
		if custom > 6 || generic == 0 {
			t.Errorf("12 commits (%s) planned %d times anew and %d times generically; want the generic plan from the seventh on",
				kind, custom, generic)
		}
	}
}

// TestEventPayloadsRoundTrip commits batches whose payloads mix NULL and JSON in every
// position, with the characters an encoding could trip on, and reads them back as written.
func TestEventPayloadsRoundTrip(t *testing.T) {
	tricky := `{"q":"\"quoted\" \\ back\\slash, {braces}, commas, NULL, \u001e escaped separator","zh":"你好","e":"😀"}`
	cases := []struct {
		name string
		data []string // "" is NULL
	}{
		{"one NULL", []string{""}},
		{"NULL last", []string{`{"a":1}`, ""}},
		{"NULL first", []string{"", `{"a":1}`}},
		{"only NULLs", []string{"", "", ""}},
		{"NULL between", []string{`[1]`, "", `"s"`}},
		{"tricky text", []string{tricky, `null`, `"NULL"`, `""`, tricky}},
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, a := createTurn(t, s, newSession(t, s, "alice"), tc.name, "")
				batch := events(a.ID, 1, int64(len(tc.data)))
				for i, d := range tc.data {
					batch[i].Data = store.JSON(d)
				}
				if err := commitEvents(ctx, s, batch); err != nil {
					t.Fatal(err)
				}
				got, err := s.ListEvents(ctx, a.ID, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				var data []string
				for _, e := range got {
					data = append(data, string(e.Data))
				}
				want := slices.Clone(tc.data)
				for i, d := range want {
					if d == "null" {
						want[i] = "" // the literal null reads as NULL (store.JSON)
					}
				}
				if diff := cmp.Diff(want, data); diff != "" {
					t.Errorf("payloads read back (-written +read):\n%s", diff)
				}
			})
		}
		t.Run("a payload that is not JSON is refused with its batch", func(t *testing.T) {
			_, a := createTurn(t, s, newSession(t, s, "alice"), "bad", "")
			batch := events(a.ID, 1, 3)
			batch[1].Data = store.JSON("{\"a\":\"x\x1ey\"}") // a raw control byte: not JSON
			if err := commitEvents(ctx, s, batch); err == nil {
				t.Fatal("CommitEvents with a payload that is not JSON = nil, want an error")
			}
			if got, _ := s.ListEvents(ctx, a.ID, 0, 0); len(got) != 0 {
				t.Errorf("a refused batch wrote seqs %v", seqs(got))
			}
		})
	})
}

// TestDeltaCommitsKeepTheirFence commits batches that only bring deltas, which PostgreSQL
// writes through its lean statements (one message's, several messages'), and checks that
// they fence as every commit does: a message whose log already reaches the batch's first
// seq (a retried commit that had in fact been written) or that another replica owns is
// reported lost with nothing written, the other messages of the batch are written, and a
// status the batch brings moves the row.
func TestDeltaCommitsKeepTheirFence(t *testing.T) {
	cases := []struct {
		name string
		// batch builds the batch from a message whose log holds seqs 1..3 (stored) and a
		// new one (fresh); wantLost names which of them it loses.
		batch    func(stored, fresh string) []store.Event
		owner    string
		wantLost []string // "stored", "fresh"
	}{
		{"one message, its next seqs", func(st, _ string) []store.Event { return events(st, 4, 5) }, testOwner, nil},
		{"one message, a seq it stored", func(st, _ string) []store.Event { return events(st, 3, 4) }, testOwner, []string{"stored"}},
		{"one message, another owner's", func(st, _ string) []store.Event { return events(st, 4, 4) }, "replica-other", []string{"stored"}},
		{"two messages, one a seq it stored", func(st, fr string) []store.Event {
			return append(events(st, 2, 4), events(fr, 1, 2)...)
		}, testOwner, []string{"stored"}},
		{"two messages, another owner's", func(st, fr string) []store.Event {
			return append(events(fr, 1, 1), events(st, 4, 4)...)
		}, "replica-other", []string{"fresh", "stored"}},
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ctx := t.Context()
				_, stored := createTurn(t, s, newSession(t, s, "alice"), tc.name, "")
				_, fresh := createTurn(t, s, newSession(t, s, "bob"), tc.name, "")
				if err := commitEvents(ctx, s, events(stored.ID, 1, 3)); err != nil {
					t.Fatal(err)
				}
				names := map[string]string{stored.ID: "stored", fresh.ID: "fresh"}
				batch := tc.batch(stored.ID, fresh.ID)
				batch[0].Status = store.StatusStreaming // as a turn's working event does
				un, err := s.CommitEvents(ctx, tc.owner, batch)
				if err != nil {
					t.Fatal(err)
				}
				var lost []string
				for _, id := range un.Lost {
					lost = append(lost, names[id])
				}
				slices.Sort(lost)
				if !slices.Equal(lost, tc.wantLost) {
					t.Errorf("lost %v, want %v", lost, tc.wantLost)
				}
				want := map[string][]int64{stored.ID: seqRange(1, 3), fresh.ID: nil}
				for _, e := range batch {
					if !slices.Contains(un.Lost, e.MessageID) {
						want[e.MessageID] = append(want[e.MessageID], e.Seq)
					}
				}
				for id, seqsWant := range want {
					got, err := s.ListEvents(ctx, id, 0, 0)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(seqsWant, seqs(got)); diff != "" {
						t.Errorf("%s's log (-want +got):\n%s", names[id], diff)
					}
					m, err := s.GetMessage(ctx, id, map[string]string{stored.ID: "alice", fresh.ID: "bob"}[id])
					if err != nil {
						t.Fatal(err)
					}
					if wantLast := int64(len(seqsWant)); m.LastEventID != wantLast {
						t.Errorf("%s's last_event_id %d, want %d", names[id], m.LastEventID, wantLast)
					}
					moved := batch[0].MessageID == id && !slices.Contains(un.Lost, id)
					if got := m.Status == store.StatusStreaming; got != moved {
						t.Errorf("%s's status %q; moved to streaming: %t, want %t", names[id], m.Status, got, moved)
					}
				}
			})
		}
	})
}
