package store_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// The event log is stored as runs (a row per message and commit); what a reader gets back,
// through ListEvents or the view message_events, is still one event per position.
func TestEventRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		_, a := createTurn(t, s, newSession(t, s, "alice"), "a", "")
		_, b := createTurn(t, s, newSession(t, s, "bob"), "b", "")
		at := time.Date(2026, 11, 26, 12, 0, 0, 123456000, time.UTC)
		all, err := s.ListEvents(ctx, a.ID, 0, 0) // a's events as committed: the begin's, if any
		if err != nil || len(all) > 1 {
			t.Fatalf("ListEvents = %v, %v; want the begin's event at most", all, err)
		}
		for _, batch := range [][]store.Event{events(a.ID, 2, 4), events(a.ID, 5, 5), events(a.ID, 6, 9)} {
			batch[0].Name, batch[0].Data = "heartbeat", nil // a NULL payload opens a run
			batch[len(batch)-1].Data = store.JSON(`null`)   // and one ends it
			for i := range batch {
				batch[i].CreatedAt = at.Add(time.Duration(batch[i].Seq) * time.Millisecond)
			}
			if len(batch) > 1 { // beside another message's events
				batch = append(events(b.ID, batch[0].Seq, batch[0].Seq), batch...)
			}
			if err := commitEvents(ctx, s, batch); err != nil {
				t.Fatal(err)
			}
			for _, e := range batch {
				if e.MessageID == a.ID {
					if e.Data.IsNull() {
						e.Data = nil
					}
					all = append(all, e)
				}
			}
		}

		t.Run("every position and limit reads what was committed", func(t *testing.T) {
			for after := range int64(len(all) + 2) {
				for _, limit := range []int{0, 1, 2, 3, 5, 100} {
					got, err := s.ListEvents(ctx, a.ID, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					var want []store.Event
					for _, e := range all {
						if e.Seq > after {
							want = append(want, e)
						}
					}
					if limit > 0 && len(want) > limit {
						want = want[:limit]
					}
					if diff := cmp.Diff(want, got, cmp.Comparer(sameEvent)); diff != "" {
						t.Fatalf("ListEvents(after %d, limit %d) (-committed +listed):\n%s", after, limit, diff)
					}
				}
			}
		})

		t.Run("the view shows one row an event", func(t *testing.T) {
			got, err := s.EventRows(ctx, a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(all, got, cmp.Comparer(sameEvent)); diff != "" {
				t.Errorf("message_events (-committed +view):\n%s", diff)
			}
		})

		t.Run("a batch that interleaves two messages is refused", func(t *testing.T) {
			batch := append(events(a.ID, 10, 10), append(events(b.ID, 5, 5), events(a.ID, 11, 11)...)...)
			if err := commitEvents(ctx, s, batch); err == nil {
				t.Error("CommitEvents with a message's events apart = nil, want an error")
			}
		})

		t.Run("a commit that overlaps stored events writes nothing", func(t *testing.T) {
			for _, batch := range [][]store.Event{events(a.ID, 9, 10), events(a.ID, 3, 4), events(a.ID, 1, 1)} {
				un, err := s.CommitEvents(ctx, testOwner, batch)
				if err != nil || len(un.Lost) != 1 {
					t.Errorf("CommitEvents(%v) = %+v, %v; want the message not written", seqs(batch), un, err)
				}
			}
			if got, _ := s.ListEvents(ctx, a.ID, 0, 0); len(got) != len(all) {
				t.Errorf("%d events after the overlapping commits, want %d", len(got), len(all))
			}
		})
	})
}

// sameEvent compares what the log keeps of an event: position, name, payload, time.
func sameEvent(x, y store.Event) bool {
	return x.MessageID == y.MessageID && x.Seq == y.Seq && x.Name == y.Name &&
		string(x.Data) == string(y.Data) && x.CreatedAt.Equal(y.CreatedAt)
}

// A database written before migration 0010 keeps its events: each becomes a run of one.
func TestMigrationToRunsKeepsTheLog(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		old := open(t, freshURL(t, s.Driver()), "")
		if err := old.MigrateThrough(ctx, "0009_strategy_by_session_and_user"); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 11, 26, 12, 0, 0, 123456000, time.UTC)
		want := []store.Event{
			{MessageID: "m1", Seq: 1, Name: "status", Data: store.JSON(`{"state":"queued"}`), CreatedAt: at},
			{MessageID: "m1", Seq: 2, Name: "heartbeat", CreatedAt: at.Add(time.Second)},
			{MessageID: "m1", Seq: 3, Name: "content_delta", Data: store.JSON(`{"seq":1,"delta":"héllo \u001e"}`), CreatedAt: at.Add(time.Minute)},
		}
		// Another message's log, with a gap (not written by Phaseflow, which writes none) and
		// past the migration's 64 events a run.
		other := []store.Event{
			{MessageID: "m2", Seq: 1, Name: "status", Data: store.JSON(`{"state":"queued"}`), CreatedAt: at},
			{MessageID: "m2", Seq: 2, Name: "status", Data: store.JSON(`{"state":"working"}`), CreatedAt: at},
			{MessageID: "m2", Seq: 64, Name: "content_delta", Data: store.JSON(`{"seq":62}`), CreatedAt: at},
			{MessageID: "m2", Seq: 65, Name: "content_delta", Data: store.JSON(`{"seq":63}`), CreatedAt: at},
		}
		for _, e := range append(other, want...) {
			var data any
			if e.Data != nil {
				data = string(e.Data)
			}
			if err := old.Exec(ctx, `INSERT INTO message_events (message_id, seq, name, data, created_at) VALUES (?, ?, ?, ?, ?)`,
				e.MessageID, e.Seq, e.Name, data, e.CreatedAt); err != nil {
				t.Fatal(err)
			}
		}
		applied, err := old.Migrate(ctx)
		if err != nil || len(applied) == 0 || applied[0] != "0010_event_runs" {
			t.Fatalf("Migrate = %v, %v; want 0010_event_runs applied first", applied, err)
		}
		got, err := old.ListEvents(ctx, "m1", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(sameEvent)); diff != "" {
			t.Errorf("events after the migration (-before +after):\n%s", diff)
		}
		if got, err := old.ListEvents(ctx, "m2", 0, 0); err != nil || !cmp.Equal(other, got, cmp.Comparer(sameEvent)) {
			t.Errorf("the other message's events after the migration: %v, %v; want %v", got, err, other)
		}
		view, err := old.EventRows(ctx, "m1")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, view, cmp.Comparer(sameEvent)); diff != "" {
			t.Errorf("message_events after the migration (-before +view):\n%s", diff)
		}
		if s.Driver() != store.DriverPostgres {
			return // one process at a time holds a SQLite file: no older replica writes beside it
		}
		// A replica of the build before, still running during a rolling deploy, inserts
		// into message_events as it did (its commit statement, reduced to the insert).
		next := store.Event{MessageID: "m1", Seq: 4, Name: "completed", Data: store.JSON(`{"reply_len":6}`), CreatedAt: at.Add(time.Hour)}
		if err := old.Exec(ctx, `WITH i AS (INSERT INTO message_events (message_id, seq, name, data, created_at)
			SELECT * FROM unnest(ARRAY[?], ARRAY[?::bigint], ARRAY[?], ARRAY[?], ARRAY[?::timestamptz])) SELECT 1`,
			next.MessageID, next.Seq, next.Name, string(next.Data), next.CreatedAt); err != nil {
			t.Fatalf("an older replica's insert: %v", err)
		}
		got, err = old.ListEvents(ctx, "m1", 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]store.Event{next}, got, cmp.Comparer(sameEvent)); diff != "" {
			t.Errorf("an older replica's event (-inserted +listed):\n%s", diff)
		}
	})
}
