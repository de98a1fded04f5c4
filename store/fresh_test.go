package store_test

import (
	"errors"
	"testing"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// TestAFreshSessionsFirstReadCostsNothing (PostgreSQL): the first turn in a session this
// replica created is read from memory, and its write checks in the database what the read
// would have found: a session changed elsewhere since, or a locale whose stored prompt the
// guess did not know of, writes nothing and answers ErrSessionChanged, and the next read
// goes to the database. A turn with a client_request_id, a later turn and another user's
// read always ask the database.
func TestAFreshSessionsFirstReadCostsNothing(t *testing.T) {
	s, counter := storetest.PostgresCounted(t)
	ctx := t.Context()
	other := storetest.Another(t, s) // another replica
	createTurn(t, s, newSession(t, s, "alice"), "warm-up", "")
	cases := []struct {
		name            string
		setup           func(sess *store.Session)
		user, requestID string
		readTrips       int64
		writeErr        error
	}{
		{name: "created here", user: "alice"},
		{name: "with a client_request_id", user: "alice", requestID: "c-1", readTrips: 1},
		{name: "another user's", user: "bob", readTrips: 1, writeErr: store.ErrNotFound},
		{name: "changed by another replica since", user: "alice", writeErr: store.ErrSessionChanged,
			setup: func(sess *store.Session) {
				renamed := *sess
				renamed.Title = "renamed"
				if err := other.UpdateSession(ctx, &renamed); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a prompt activated elsewhere", user: "alice", writeErr: store.ErrSessionChanged,
			setup: func(sess *store.Session) {
				p := &store.Prompt{Name: "strategy/skills", Locale: "en", Body: "stored"}
				if err := other.CreatePrompt(ctx, p); err != nil {
					t.Fatal(err)
				}
				if _, err := other.ActivatePrompt(ctx, p.ID); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sess := newSession(t, s, "alice")
			if tc.setup != nil {
				tc.setup(sess)
			}
			before := counter.Snapshot().RoundTrips()
			read, err := s.ReadTurn(ctx, sess.ID, tc.user, tc.requestID)
			if trips := counter.Snapshot().RoundTrips() - before; trips != tc.readTrips {
				t.Fatalf("the read cost %d round trips, want %d", trips, tc.readTrips)
			}
			if err != nil {
				if !errors.Is(err, tc.writeErr) {
					t.Fatalf("ReadTurn = %v, want %v", err, tc.writeErr)
				}
				return
			}
			u, a := turn(sess, "hi", tc.requestID)
			err = s.WriteTurn(ctx, u, a, store.TurnWrite{Lease: testStart.Lease, Read: read})
			if !errors.Is(err, tc.writeErr) {
				t.Fatalf("WriteTurn = %v, want %v", err, tc.writeErr)
			}
			before = counter.Snapshot().RoundTrips()
			if _, err := s.ReadTurn(ctx, sess.ID, "alice", ""); counter.Snapshot().RoundTrips()-before != 1 {
				t.Fatalf("the next read (%v) did not ask the database", err)
			}
		})
	}
}
