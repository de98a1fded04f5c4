package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lib/pq"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// turnFor creates a turn claimed by lease.
func turnFor(t *testing.T, s *store.Store, user string, lease store.Lease) *store.Message {
	t.Helper()
	u, a := turn(newSession(t, s, user), "x", "")
	if err := s.CreateTurn(t.Context(), u, a, store.TurnStart{Lease: lease}); err != nil {
		t.Fatal(err)
	}
	return a
}

func messageIDs(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestCreateTurnWritesItsFirstEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		u, a := turn(newSession(t, s, "alice"), "x", "")
		a.ID = "first-events"
		start := testStart
		start.Events = events(a.ID, 1, 2)
		if err := s.CreateTurn(t.Context(), u, a, start); err != nil {
			t.Fatal(err)
		}
		before := time.Now().Add(-time.Minute)
		got, err := s.ListEvents(t.Context(), a.ID, 0, 0)
		if err != nil || len(got) != 2 {
			t.Fatalf("ListEvents = %v, %v; want the two first events", seqs(got), err)
		}
		for _, e := range got {
			if e.CreatedAt.Before(before) {
				t.Errorf("event %d created at %v, want the time of the turn", e.Seq, e.CreatedAt)
			}
		}
		m, _ := s.GetMessage(t.Context(), a.ID, "alice")
		if m.LastEventID != 2 || m.Owner != testOwner {
			t.Errorf("last_event_id %d owner %q, want 2 and %q", m.LastEventID, m.Owner, testOwner)
		}
	})
}

func TestLeases(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		live := store.Lease{Owner: "replica-a", TTL: time.Hour}
		short := store.Lease{Owner: "replica-b", TTL: 50 * time.Millisecond}
		sweeper := store.Lease{Owner: "replica-c", TTL: time.Hour}
		alive := turnFor(t, s, "alice", live)
		dying := turnFor(t, s, "bob", short)
		unowned := turnFor(t, s, "carol", store.Lease{})
		finished := turnFor(t, s, "dave", short)
		finished.LastEventID = 0
		finishWith(t, s, "replica-b", finished)
		time.Sleep(100 * time.Millisecond) // short leases expire

		t.Run("the sweep claims only expired running generations", func(t *testing.T) {
			got, err := s.ClaimOrphans(ctx, sweeper, false, 10)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{dying.ID, unowned.ID}, messageIDs(got)); diff != "" {
				t.Errorf("claimed (-want +got):\n%s", diff)
			}
			for _, m := range got {
				if m.Owner != sweeper.Owner {
					t.Errorf("claimed %s owner %q, want %q", m.ID, m.Owner, sweeper.Owner)
				}
			}
			again, err := s.ClaimOrphans(ctx, store.Lease{Owner: "replica-d", TTL: time.Hour}, false, 10)
			if err != nil || len(again) != 0 {
				t.Errorf("second sweep claimed %v, %v; want nothing (the claims are fresh)", messageIDs(again), err)
			}
		})

		t.Run("the old owner is fenced off", func(t *testing.T) {
			lost, err := lostOf(s.CommitEvents(ctx, short.Owner, events(dying.ID, 1, 2)))
			if err != nil || len(lost) != 1 || lost[0] != dying.ID {
				t.Fatalf("CommitEvents by the old owner = %v, %v; want the message lost", lost, err)
			}
			if got, _ := s.ListEvents(ctx, dying.ID, 0, 0); len(got) != 0 {
				t.Errorf("the old owner wrote %v", seqs(got))
			}
			lost, err = lostOf(s.CommitEvents(ctx, sweeper.Owner, events(dying.ID, 1, 1)))
			if err != nil || len(lost) != 0 {
				t.Errorf("CommitEvents by the new owner = %v, %v; want it written", lost, err)
			}
		})

		t.Run("a mixed batch keeps the owned messages", func(t *testing.T) {
			batch := append(events(alive.ID, 1, 2), events(unowned.ID, 1, 1)...)
			lost, err := lostOf(s.CommitEvents(ctx, live.Owner, batch))
			if err != nil || len(lost) != 1 || lost[0] != unowned.ID {
				t.Fatalf("CommitEvents = %v, %v; want only %s lost", lost, err, unowned.ID)
			}
			if got, _ := s.ListEvents(ctx, alive.ID, 0, 0); len(got) != 2 {
				t.Errorf("owned message has %v, want seqs 1 and 2", seqs(got))
			}
		})

		t.Run("renewal lists what the owner still holds", func(t *testing.T) {
			other := turnFor(t, s, "frank", live) // owned, but not running any more here
			got, err := s.RenewLeases(ctx, live, []string{alive.ID, dying.ID})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]store.LeaseState{{MessageID: alive.ID}}, got); diff != "" {
				t.Errorf("RenewLeases (-want +got):\n%s", diff)
			}
			none, err := s.RenewLeases(ctx, short, []string{dying.ID})
			if err != nil || len(none) != 0 {
				t.Errorf("RenewLeases of a replica that lost everything = %v, %v", none, err)
			}
			finishWith(t, s, live.Owner, other)
		})

		t.Run("cancel", func(t *testing.T) {
			owner, err := s.RequestCancel(ctx, alive.ID, "alice")
			if err != nil || owner != live.Owner {
				t.Fatalf("RequestCancel = %q, %v; want the owner %q", owner, err, live.Owner)
			}
			got, _ := s.RenewLeases(ctx, live, []string{alive.ID})
			if len(got) != 1 || !got[0].CancelRequested {
				t.Errorf("RenewLeases after a cancel = %+v, want the flag set", got)
			}
			if _, err := s.RequestCancel(ctx, alive.ID, "bob"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("cancel by another user = %v, want ErrNotFound", err)
			}
			if _, err := s.RequestCancel(ctx, finished.ID, "dave"); !errors.Is(err, store.ErrMessageFinished) {
				t.Errorf("cancel of a finished message = %v, want ErrMessageFinished", err)
			}
			if _, err := s.RequestCancel(ctx, finished.ReplyTo, "dave"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("cancel of a user message = %v, want ErrNotFound", err)
			}
		})

		t.Run("start-up recovery of SQLite claims every running generation", func(t *testing.T) {
			fresh := turnFor(t, s, "erin", live)
			got, err := s.ClaimOrphans(ctx, sweeper, true, 10)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{alive.ID, dying.ID, unowned.ID, fresh.ID}, messageIDs(got)); diff != "" {
				t.Errorf("claimed (-want +got):\n%s", diff)
			}
		})
	})
}

// finishWith ends m for owner with a completed event.
func finishWith(t *testing.T, s *store.Store, owner string, m *store.Message) {
	t.Helper()
	m.Status = store.StatusCompleted
	m.LastEventID++
	ev := store.Event{MessageID: m.ID, Seq: m.LastEventID, Name: "completed", Data: store.JSON(`{}`), Finish: m}
	if lost, err := lostOf(s.CommitEvents(t.Context(), owner, []store.Event{ev})); err != nil || len(lost) > 0 {
		t.Fatalf("finish %s: lost %v, %v", m.ID, lost, err)
	}
}

func TestCancelIsAnnounced(t *testing.T) {
	s := storetest.Postgres(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := s.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := turnFor(t, s, "alice", store.Lease{Owner: "replica-a", TTL: time.Hour})
	if _, err := s.RequestCancel(ctx, a.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	got := receive(t, ch, 1)
	if diff := cmp.Diff([]store.Notification{{MessageID: a.ID, Cancel: true}}, got); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

func TestIsUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "refused"}}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused dial, wrapped", fmt.Errorf("store: get session: %w", refused), true},
		{"connection refused errno", fmt.Errorf("x: %w", syscall.ECONNREFUSED), true},
		{"server shutting down", &pq.Error{Code: "57P01"}, true},
		{"connection failure class", &pq.Error{Code: "08006"}, true},
		{"sentinel", fmt.Errorf("x: %w", store.ErrUnavailable), true},
		{"unique violation", &pq.Error{Code: "23505"}, false},
		{"not found", store.ErrNotFound, false},
		{"syntax error", errors.New("pq: syntax error"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := store.IsUnavailable(tc.err); got != tc.want {
				t.Errorf("IsUnavailable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestUnavailableWhenTheServerIsGone checks the classification against a real driver: a
// PostgreSQL URL whose port nobody listens on.
func TestUnavailableWhenTheServerIsGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = store.Open(t.Context(), "postgres://postgres@"+addr+"/x?sslmode=disable&connect_timeout=2", "")
	if !store.IsUnavailable(err) {
		t.Fatalf("Open on a closed port = %v; IsUnavailable false", err)
	}
}
