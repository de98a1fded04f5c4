package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// receive waits for n notifications (ignoring Resync) or fails after a timeout.
func receive(t *testing.T, ch <-chan store.Notification, n int) []store.Notification {
	t.Helper()
	var got []store.Notification
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case note, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %v", got)
			}
			if !note.Resync {
				got = append(got, note)
			}
		case <-timeout:
			t.Fatalf("got %v, want %d notifications", got, n)
		}
	}
	return got
}

// closed waits for ch to be closed.
func closed(t *testing.T, ch <-chan store.Notification) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("notification channel not closed")
		}
	}
}

func TestListen(t *testing.T) {
	t.Run("sqlite has no notifications", func(t *testing.T) {
		s := storetest.SQLite(t)
		ch, err := s.Listen(t.Context())
		if ch != nil || err != nil {
			t.Errorf("Listen = %v, %v; want nil, nil", ch, err)
		}
		if err := s.Watch(t.Context(), "any"); err != nil {
			t.Errorf("Watch = %v, want nil", err)
		}
	})

	t.Run("postgres", func(t *testing.T) {
		s := storetest.Postgres(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		ch, err := s.Listen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, a := createTurn(t, s, newSession(t, s, "alice"), "a", "")
		_, b := createTurn(t, s, newSession(t, s, "bob"), "b", "")

		// Nobody watches a: its commit announces nothing, so the first notification is b's,
		// committed after it (notifications arrive in commit order).
		if err := commitEvents(ctx, s, events(a.ID, 1, 3)); err != nil {
			t.Fatal(err)
		}
		if err := s.Watch(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		if err := commitEvents(ctx, s, events(b.ID, 1, 1)); err != nil {
			t.Fatal(err)
		}
		want := []store.Notification{{MessageID: b.ID, Seq: 1}}
		if diff := cmp.Diff(want, receive(t, ch, 1)); diff != "" {
			t.Errorf("after an unwatched and a watched message (-want +got):\n%s", diff)
		}

		if err := s.Watch(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := commitEvents(ctx, s, append(events(a.ID, 4, 5), events(b.ID, 2, 2)...)); err != nil {
			t.Fatal(err)
		}
		want = []store.Notification{{MessageID: a.ID, Seq: 5}, {MessageID: b.ID, Seq: 2}}
		byMessage := cmpopts.SortSlices(func(x, y store.Notification) bool { return x.MessageID < y.MessageID })
		if diff := cmp.Diff(want, receive(t, ch, 2), byMessage); diff != "" {
			t.Errorf("after a batch of two messages (-want +got):\n%s", diff)
		}

		// A failed batch is rolled back and announces nothing.
		_ = commitEvents(ctx, s, events(a.ID, 5, 6))
		if err := commitEvents(ctx, s, events(b.ID, 3, 3)); err != nil {
			t.Fatal(err)
		}
		want = []store.Notification{{MessageID: b.ID, Seq: 3}}
		if diff := cmp.Diff(want, receive(t, ch, 1)); diff != "" {
			t.Errorf("after a failed batch (-want +got):\n%s", diff)
		}

		cancel()
		closed(t, ch)
	})

	t.Run("other store instance, closed with the store", func(t *testing.T) {
		dsn := storetest.PostgresDSN(t)
		writer := open(t, dsn, "")
		if _, err := writer.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		reader, err := store.Open(t.Context(), dsn, "")
		if err != nil {
			t.Fatal(err)
		}
		ch, err := reader.Listen(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		_, a := createTurn(t, writer, newSession(t, writer, "alice"), "a", "")
		if err := reader.Watch(t.Context(), a.ID); err != nil {
			t.Fatal(err)
		}
		if err := commitEvents(t.Context(), writer, events(a.ID, 1, 1)); err != nil {
			t.Fatal(err)
		}
		receive(t, ch, 1)
		if err := reader.Close(); err != nil {
			t.Fatal(err)
		}
		closed(t, ch)
		if _, err := reader.Listen(t.Context()); err == nil {
			t.Error("Listen on a closed store = nil error, want one")
		}
	})

	t.Run("reconnect becomes a resync", func(t *testing.T) {
		dsn := storetest.PostgresDSN(t)
		s := open(t, dsn, "")
		if _, err := s.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		ch, err := s.Listen(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		admin, err := sql.Open("postgres", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		res, err := admin.ExecContext(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN %'`)
		if n, _ := res.RowsAffected(); err != nil || n != 1 {
			t.Fatalf("terminate the listener: %d backends, %v", n, err)
		}
		select {
		case note := <-ch:
			if !note.Resync {
				t.Fatalf("first notification after the reconnect = %+v, want Resync", note)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("no Resync after the listener's connection was killed")
		}
		// The listener is back: new appends are announced again.
		_, a := createTurn(t, s, newSession(t, s, "alice"), "a", "")
		if err := s.Watch(t.Context(), a.ID); err != nil {
			t.Fatal(err)
		}
		if err := commitEvents(t.Context(), s, events(a.ID, 1, 1)); err != nil {
			t.Fatal(err)
		}
		if got := receive(t, ch, 1); got[0].MessageID != a.ID {
			t.Errorf("after reconnect got %+v", got)
		}
	})

	t.Run("ended context", func(t *testing.T) {
		s := storetest.Postgres(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if ch, err := s.Listen(ctx); err == nil {
			t.Errorf("Listen(cancelled ctx) = %v, nil; want an error", ch)
		}
	})
}
