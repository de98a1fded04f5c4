package store_test

import (
	"errors"
	"testing"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// A session made with a chosen id is made once: a second maker finds it, whoever was
// first; and the running message of a session is its pending or streaming reply.
func TestCreateSessionIfAbsentAndRunningMessage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		first := &store.Session{ID: "6b1f0e52-3c9a-5d7e-8f21-5ac4903d17e8", UserID: "ann", Title: "one", Locale: "en", Phase: "strategy", Status: "active"}
		created, err := s.CreateSessionIfAbsent(ctx, first)
		if err != nil || !created {
			t.Fatalf("first CreateSessionIfAbsent = %v, %v", created, err)
		}
		again := &store.Session{ID: first.ID, UserID: "ann", Title: "two", Locale: "zh", Phase: "strategy", Status: "active"}
		if created, err := s.CreateSessionIfAbsent(ctx, again); err != nil || created {
			t.Fatalf("second CreateSessionIfAbsent = %v, %v; want false", created, err)
		}
		if got, err := s.GetSession(ctx, first.ID, "ann"); err != nil || got.Title != "one" || got.Locale != "en" {
			t.Fatalf("the stored session = %+v, %v; want the first", got, err)
		}

		if _, err := s.RunningMessage(ctx, first.ID, "ann"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a session without a turn has a running message: %v", err)
		}
		_, a := createTurn(t, s, first, "hello", "")
		got, err := s.RunningMessage(ctx, first.ID, "ann")
		if err != nil || got.ID != a.ID {
			t.Fatalf("RunningMessage = %+v, %v; want %s", got, err, a.ID)
		}
		if _, err := s.RunningMessage(ctx, first.ID, "bob"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another user sees the running message: %v", err)
		}
		finishWith(t, s, testOwner, a)
		if _, err := s.RunningMessage(ctx, first.ID, "ann"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a finished reply is still running: %v", err)
		}
	})
}
