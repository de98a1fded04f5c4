package store_test

import (
	"errors"
	"testing"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// TestAFreshSessionsFirstTurnIsWrittenOnItsGuess (PostgreSQL): the first turn in a session
// this replica created is locked in on the session as created, before any round trip, so
// its plan and upstream call wait for none; and it is written without the begin's read, by
// a write that checks what the read would have found. So is a message's that starts its
// session locked in, unless it may be a retry (its transaction still reads). A session
// changed elsewhere since, a strategy stored for it, a locale whose stored prompt the guess
// did not know of, or a conflict: the guessed write writes nothing, and the turn is locked
// in again on what the read found, or refused. Later turns, and sessions this replica did
// not create, read first.
func TestAFreshSessionsFirstTurnIsWrittenOnItsGuess(t *testing.T) {
	s, counter := storetest.PostgresCounted(t)
	ctx := t.Context()
	db := s.Pools()["main"]
	createTurn(t, s, newSession(t, s, "alice"), "warm-up", "") // its statements are prepared

	// lockIn is one Locked call: how many round trips CreateTurn had made by then, and
	// the session and Seen the turn was locked in on.
	type lockIn struct {
		sent                       int64
		title                      string
		history, strategy, prompts bool
	}
	begin := func(sess *store.Session, userID, text, clientRequestID string, newSession bool) ([]lockIn, error) {
		var locks []lockIn
		var title string
		var history, strategy, prompts bool
		before := counter.Snapshot().RoundTrips()
		start := testStart
		start.Prepare = func(row *store.Session, seen store.Seen) ([]store.Event, error) {
			title, history, strategy, prompts = row.Title, seen.History, seen.Strategy, seen.Prompts
			return nil, nil
		}
		start.Locked = func() {
			locks = append(locks, lockIn{counter.Snapshot().RoundTrips() - before, title, history, strategy, prompts})
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
	isDuplicate := func(err error) bool { return errors.As(err, new(*store.DuplicateRequestError)) }
	cases := []struct {
		name  string
		setup func(sess *store.Session) // after the session is created, before its first turn
		turns int                       // turns begun in it before the one checked
		user  string
		// newSession: the message starts its session (not created by POST /sessions);
		// retry: with a client_request_id; repeat: one an earlier turn of the user's had
		newSession, retry, repeat bool
		want                      []lockIn
		wantTrips                 int64 // round trips of the whole begin, when not 0
		wantErr                   func(error) bool
	}{
		{name: "created here", want: []lockIn{{0, "t", false, false, false}}, wantTrips: 1},
		{name: "its second turn", turns: 1, want: []lockIn{{1, "t", true, false, false}}, wantTrips: 2},
		{name: "changed by another replica since", setup: func(sess *store.Session) {
			sess.Title = "renamed"
			if err := other.UpdateSession(ctx, sess); err != nil {
				t.Fatal(err)
			}
		}, want: []lockIn{{0, "t", false, false, false}, {2, "renamed", false, false, false}}, wantTrips: 3},
		{name: "a strategy stored for it by another replica", setup: func(sess *store.Session) {
			st := &store.Strategy{UserID: "alice", SessionID: sess.ID, Name: "s", Spec: store.JSON(`{}`), Status: "draft", BacktestStatus: "none"}
			if err := other.UpsertStrategy(ctx, st); err != nil {
				t.Fatal(err)
			}
		}, want: []lockIn{{0, "t", false, false, false}, {2, "t", false, true, false}}, wantTrips: 3},
		{name: "a stored prompt activated for its locale", setup: func(*store.Session) {
			exec(`INSERT INTO prompts (id, name, locale, body, version, active, created_by, created_at)
				VALUES ($1, 'system', 'en', 'b', 1, true, 'root', now())`, store.NewID())
		}, want: []lockIn{{0, "t", false, false, false}, {2, "t", false, false, true}}, wantTrips: 3},
		{name: "the next one in that locale", want: []lockIn{{0, "t", false, false, true}}, wantTrips: 1},
		{name: "another user's", user: "mallory", wantErr: isNotFound},
		{name: "a turn begun since by another replica", setup: func(sess *store.Session) {
			u, a := turn(sess, "elsewhere", "")
			if err := other.CreateTurn(ctx, u, a, store.TurnStart{Lease: store.Lease{Owner: "replica-other", TTL: testStart.Lease.TTL}}); err != nil {
				t.Fatal(err)
			}
		}, want: []lockIn{{0, "t", false, false, true}}, wantErr: isRunning},
		{name: "a turn begun and ended since by another replica", setup: func(sess *store.Session) {
			u, a := turn(sess, "elsewhere", "")
			if err := other.CreateTurn(ctx, u, a, store.TurnStart{Lease: store.Lease{Owner: "replica-other", TTL: testStart.Lease.TTL}}); err != nil {
				t.Fatal(err)
			}
			finishWith(t, other, "replica-other", a)
		}, want: []lockIn{{0, "t", false, false, true}, {2, "t", true, false, true}}, wantTrips: 3},
		{name: "a client_request_id used before in another session", retry: true, repeat: true,
			want: []lockIn{{0, "t", false, false, true}}, wantErr: isDuplicate},
		{name: "a message that starts its session", newSession: true, want: []lockIn{{0, "t", false, false, true}}, wantTrips: 4},
		{name: "the same with a client_request_id", newSession: true, retry: true, want: []lockIn{{3, "t", false, false, true}}, wantTrips: 5},
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
			if tc.repeat {
				createTurn(t, s, newSession(t, s, "alice"), "earlier", crid)
			}
			before := counter.Snapshot().RoundTrips()
			locks, err := begin(sess, cmpOr(tc.user, "alice"), "checked", crid, tc.newSession)
			if trips := counter.Snapshot().RoundTrips() - before; tc.wantTrips != 0 && trips != tc.wantTrips {
				t.Errorf("the begin took %d round trips, want %d", trips, tc.wantTrips)
			}
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
