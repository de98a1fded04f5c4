package orchestration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// lockedStore runs a test's step between the turn's read and its write: the turn has
// started on the read by then. cancel fails the write.
type lockedStore struct {
	*store.Store
	atLock func(cancel context.CancelFunc)
}

func (s *lockedStore) WriteTurn(ctx context.Context, user, assistant *store.Message, w store.TurnWrite) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.atLock(cancel)
	return s.Store.WriteTurn(ctx, user, assistant, w)
}

// askedWithin reports whether the upstream was asked within d.
func askedWithin(up *fakeUpstream, d time.Duration) bool {
	select {
	case <-up.called:
		return true
	case <-time.After(d):
		return false
	}
}

// The upstream is asked before the begin's write, so the write and its commit overlap the
// model's time to its first token; the turn's events still come
// after the committed queued event, in the contract's order, also when the upstream fails
// before sending anything.
func TestUpstreamIsAskedBeforeTheBeginCommits(t *testing.T) {
	cases := []struct {
		name   string
		script script
		want   string
	}{
		{name: "a reply", script: script{deltas: []string{reply("")}}, want: "queued working routed content_delta completed"},
		{name: "an upstream that refuses at once", script: script{refuse: &upstream.Error{Kind: upstream.KindUnavailable, HTTPStatus: 503}},
			want: "queued working error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := &fakeUpstream{scripts: []script{tc.script}, called: make(chan struct{}, 1)}
			asked := false
			h := newHarnessOn(t, up, func(st *store.Store) Store {
				return &lockedStore{Store: st, atLock: func(context.CancelFunc) { asked = askedWithin(up, 5*time.Second) }}
			}, 0)
			ctx := context.Background()
			sess, err := h.orch.CreateSession(ctx, "u1", "t", "en")
			if err != nil {
				t.Fatal(err)
			}
			turn, err := h.orch.HandleMessage(ctx, Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: "hello there"}})
			if err != nil {
				t.Fatal(err)
			}
			if !asked {
				t.Fatal("the upstream was not asked while the begin was open")
			}
			if got := strings.Join(states(h.follow(turn.MessageID)), " "); got != tc.want {
				t.Fatalf("events %s\nwant   %s", got, tc.want)
			}
		})
	}
}

// A begin that fails after its read (here its request is cancelled during the write)
// leaves nothing: the call fails, the upstream call already under way is dropped, no row
// of the turn exists, and its slot is free for the next turn, which runs as usual.
func TestABeginThatFailsAfterItsLockLeavesNothing(t *testing.T) {
	up := &fakeUpstream{scripts: []script{{hang: true}, {deltas: []string{reply("")}}}, called: make(chan struct{}, 1)}
	fail := true
	h := newHarnessOn(t, up, func(st *store.Store) Store {
		return &lockedStore{Store: st, atLock: func(cancel context.CancelFunc) {
			if fail {
				fail = false
				askedWithin(up, 5*time.Second)
				cancel()
			}
		}}
	}, 1) // one slot: the second turn starts only if the first gave it back
	ctx := context.Background()
	sess, err := h.orch.CreateSession(ctx, "u1", "t", "en")
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: "hello there"}}
	if _, err := h.orch.HandleMessage(ctx, req); err == nil {
		t.Fatal("a begin whose write was cancelled succeeded")
	}
	msgs, err := h.st.ListMessages(ctx, sess.ID, "u1")
	if err != nil || len(msgs) != 0 {
		t.Fatalf("after the failed begin the session has %d messages (%v), want none", len(msgs), err)
	}
	turn, err := h.orch.HandleMessage(ctx, req)
	if err != nil {
		t.Fatalf("the next turn: %v", err)
	}
	evs := h.follow(turn.MessageID)
	if got := strings.Join(states(evs), " "); got != "queued working routed content_delta completed" {
		t.Fatalf("the next turn's events %s", got)
	}
	h.checkEnd(turn.MessageID, evs, store.StatusCompleted, "", "strategy", sess.ID, nil)
	if msgs, _ := h.st.ListMessages(ctx, sess.ID, "u1"); len(msgs) != 2 {
		t.Fatalf("the session has %d messages, want the next turn's two", len(msgs))
	}
}
