package store

import (
	"context"
	"testing"
	"time"
)

// checkpointingStore is as much of a Store as the checkpoint loop's waits use: its
// background context, already ended when closing, and its commit notes.
func checkpointingStore(t *testing.T, closing bool) *Store {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if closing {
		cancel()
	}
	return &Store{bg: ctx, commits: make(chan struct{}, 1)}
}

// A checkpoint starts settle after the next event-log commit, or after d when none comes;
// a commit noted before the wait is no news (its quiet may be over), and a closing store
// ends the wait at once.
func TestCheckpointWaitsForACommit(t *testing.T) {
	const settle, commitAt = 20 * time.Millisecond, 30 * time.Millisecond
	cases := []struct {
		name    string
		d       time.Duration
		stale   bool // a note pending before the wait
		commit  bool // a commit noted commitAt into the wait
		closing bool
		ok      bool
		atLeast time.Duration
		under   time.Duration // 0: no bound
	}{
		{"a commit: settle after it, not d", time.Minute, false, true, false, true, commitAt + settle, time.Minute / 2},
		{"no commit: after d", 100 * time.Millisecond, false, false, false, true, 100 * time.Millisecond, 0},
		{"a note from before: after d", 100 * time.Millisecond, true, false, false, true, 100 * time.Millisecond, 0},
		{"store closing: at once", time.Minute, false, false, true, false, 0, time.Minute / 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := checkpointingStore(t, tc.closing)
			if tc.stale {
				s.noteCommit()
			}
			if tc.commit {
				done := make(chan struct{})
				defer func() { <-done }()
				go func() {
					defer close(done)
					time.Sleep(commitAt)
					s.noteCommit()
				}()
			}
			tm := time.NewTimer(time.Hour)
			defer tm.Stop()
			began := time.Now()
			ok := s.afterCommit(tm, tc.d, settle)
			took := time.Since(began)
			if ok != tc.ok {
				t.Fatalf("afterCommit = %v, want %v", ok, tc.ok)
			}
			if took < tc.atLeast || (tc.under > 0 && took >= tc.under) {
				t.Fatalf("afterCommit returned after %v, want at least %v and under %v", took, tc.atLeast, tc.under)
			}
		})
	}
}

// Every event-log commit on SQLite is noted for the checkpointer, and noting never waits.
func TestEventCommitsAreNoted(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, "sqlite://:memory:", "") // no checkpointer reads the notes here
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s.commits = make(chan struct{}, 1)
	sess := &Session{UserID: "alice", Title: "t", Locale: "en", Phase: "strategy", Status: "active"}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	u := &Message{SessionID: sess.ID, UserID: sess.UserID, Content: "hi", Phase: sess.Phase, RequestID: "req-hi"}
	a := &Message{}
	if err := s.CreateTurn(ctx, u, a, TurnStart{Lease: Lease{Owner: "r", TTL: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	if len(s.commits) != 0 {
		t.Fatal("a note before any event was committed")
	}
	for seq := int64(1); seq <= 2; seq++ { // the second finds a note pending, and must not wait
		ev := Event{MessageID: a.ID, Seq: seq, Name: "content_delta", Data: JSON(`{"delta":"x"}`)}
		if _, err := s.CommitEvents(ctx, "r", []Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.commits) != 1 {
		t.Fatalf("%d notes pending after two commits, want 1", len(s.commits))
	}
}
