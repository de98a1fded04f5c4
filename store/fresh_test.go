package store_test

import (
	"errors"
	"testing"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// TestAFreshSessionsFirstTurnStartsBeforeItsRead (PostgreSQL): the first turn in a session
// this replica created is locked in on the session as created, before the begin's read is
// sent, so its plan and upstream call do not wait for that round trip; the read still
// decides. So is a message's that starts its session, unless it may be a retry. A session changed elsewhere since, a locale whose stored prompt the guess did
// not know of, or a conflict the read finds: the turn is locked in again on what the read
// found, or refused. Later turns, and sessions this replica did not create, read first.
func TestAFreshSessionsFirstTurnStartsBeforeItsRead(t *testing.T) {
	s, counter := storetest.PostgresCounted(t)
	ctx := t.Context()
	db := s.Pools()["main"]
	createTurn(t, s, newSession(t, s, "alice"), "warm-up", "") // its statements are prepared

	// lockIn is one Locked call: how many round trips CreateTurn had made by then, and
	// the session and Seen the turn was locked in on.
	type lockIn struct {
		sent    int64
		title   string
		prompts bool
	}
	begin := func(sess *store.Session, userID, text, clientRequestID string, newSession bool) ([]lockIn, error) {
		var locks []lockIn
		var title string
		var prompts bool
		before := counter.Snapshot().RoundTrips()
		start := testStart
		start.Prepare = func(row *store.Session, seen store.Seen) ([]store.Event, error) {
			title, prompts = row.Title, seen.Prompts
			return nil, nil
		}
		start.Locked = func() {
			locks = append(locks, lockIn{counter.Snapshot().RoundTrips() - before, title, prompts})
		}
		u, a := turn(sess, text, clientRequestID)
		u.UserID = userID
		if newSession {
			start.NewSession = sess
		}
		return locks, s.CreateTurn(ctx, u, a, start)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}

	other := storetest.Another(t, s) // another replica
	isNotFound := func(err error) bool { return errors.Is(err, store.ErrNotFound) }
	isRunning := func(err error) bool { return errors.As(err, new(*store.GenerationRunningError)) }
	cases := []struct {
		name  string
		setup func(sess *store.Session) // after the session is created, before its first turn
		turns int                       // turns begun in it before the one checked
		user  string
		// newSession: the message starts its session (not created by POST /sessions);
		// retry: with a client_request_id
		newSession, retry bool
		want              []lockIn
		wantErr           func(error) bool
	}{
		{name: "created here", want: []lockIn{{0, "t", false}}},
		{name: "its second turn", turns: 1, want: []lockIn{{1, "t", false}}},
		{name: "changed by another replica since", setup: func(sess *store.Session) {
			sess.Title = "renamed"
			if err := other.UpdateSession(ctx, sess); err != nil {
				t.Fatal(err)
			}
		}, want: []lockIn{{0, "t", false}, {1, "renamed", false}}},
		{name: "a stored prompt activated for its locale", setup: func(*store.Session) {
			exec(`INSERT INTO prompts (id, name, locale, body, version, active, created_by, created_at)
				VALUES ($1, 'system', 'en', 'b', 1, true, 'root', now())`, store.NewID())
		}, want: []lockIn{{0, "t", false}, {1, "t", true}}},
		{name: "the next one in that locale", want: []lockIn{{0, "t", true}}},
		{name: "another user's", user: "mallory", wantErr: isNotFound},
		{name: "a turn begun since by another replica", setup: func(sess *store.Session) {
			u, a := turn(sess, "elsewhere", "")
			if err := other.CreateTurn(ctx, u, a, store.TurnStart{Lease: store.Lease{Owner: "replica-other", TTL: testStart.Lease.TTL}}); err != nil {
				t.Fatal(err)
			}
		}, want: []lockIn{{0, "t", true}}, wantErr: isRunning},
		{name: "a message that starts its session", newSession: true, want: []lockIn{{0, "t", true}}},
		{name: "the same with a client_request_id", newSession: true, retry: true, want: []lockIn{{3, "t", true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sess := &store.Session{ID: store.NewID(), UserID: "alice", Title: "t", Locale: "en", Phase: "strategy", Status: "active"}
			if !tc.newSession {
				sess = newSession(t, s, "alice")
			}
			for range tc.turns {
				_, a := createTurn(t, s, sess, "earlier", "")
				finish(t, s, a, store.StatusCompleted)
			}
			if tc.setup != nil {
				tc.setup(sess)
			}
			crid := ""
			if tc.retry {
				crid = store.NewID()
			}
			locks, err := begin(sess, cmpOr(tc.user, "alice"), "checked", crid, tc.newSession)
			switch {
			case tc.wantErr != nil && (err == nil || !tc.wantErr(err)):
				t.Fatalf("CreateTurn = %v, want the case's error", err)
			case tc.wantErr == nil && err != nil:
				t.Fatalf("CreateTurn = %v", err)
			}
			if len(locks) != len(tc.want) {
				t.Fatalf("locked in %d times %+v, want %+v", len(locks), locks, tc.want)
			}
			for i := range locks {
				if locks[i] != tc.want[i] {
					t.Errorf("lock-in %d = %+v, want %+v", i+1, locks[i], tc.want[i])
				}
			}
		})
	}
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
