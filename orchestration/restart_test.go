package orchestration

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/report"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// restartCount is a Metrics that counts restarts only.
type restartCount struct {
	report.Metrics // report.Discard()
	n              atomic.Int64
}

func (r *restartCount) TurnRestarted() { r.n.Add(1) }

// movingStore moves the session to stress_test right after a turn's first read of it, as
// another writer would (a phase move on another replica), so the begin's write finds the
// session changed.
type movingStore struct {
	*store.Store
	moved atomic.Bool
}

func (m *movingStore) ReadTurn(ctx context.Context, sessionID, userID, clientRequestID string) (*store.TurnSession, error) {
	read, err := m.Store.ReadTurn(ctx, sessionID, userID, clientRequestID)
	if err == nil && m.moved.CompareAndSwap(false, true) {
		moved := read.Session
		moved.Phase = "stress_test"
		if uerr := m.Store.UpdateSession(ctx, &moved); uerr != nil {
			return nil, uerr
		}
	}
	return read, err
}

// TestATurnWhoseSessionChangedStartsAgain: a turn starts on its session's read; when the
// session changes before the turn's write, nothing of that start is kept (no message, no
// event), the turn begins again on the session as it now is, runs in its new phase, and
// the restart is counted for operators.
func TestATurnWhoseSessionChangedStartsAgain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		up := &fakeUpstream{scripts: []script{{deltas: []string{reply("")}}}}
		restarts := &restartCount{Metrics: report.Discard()}
		moving := &movingStore{Store: st}
		h := assemble(t, st, moving, up, Config{Provider: "fake", Model: "m", RecoverAll: true}, restarts)
		ctx := context.Background()
		sess, err := h.orch.CreateSession(ctx, "u1", "t", "en")
		if err != nil {
			t.Fatal(err)
		}
		turn, err := h.orch.HandleMessage(ctx, Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: "hello"}})
		if err != nil {
			t.Fatal(err)
		}
		evs := h.follow(turn.MessageID)
		if !strings.Contains(string(evs[len(evs)-1].Data), `"reply_len"`) {
			t.Fatalf("the turn did not complete: %s", evs[len(evs)-1].Data)
		}
		if evs[0].Seq != 1 || !strings.Contains(string(evs[0].Data), `"phase":"stress_test"`) {
			t.Fatalf("the turn's first event %s, want queued in the session's new phase", evs[0].Data)
		}
		if n := restarts.n.Load(); n != 1 {
			t.Errorf("%d restarts counted, want 1", n)
		}
		msgs, err := st.LatestMessages(ctx, sess.ID, 10)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("the session holds %d messages (%v), want the one turn's two", len(msgs), err)
		}
		if msgs[1].ID != turn.MessageID || msgs[1].Phase != "stress_test" {
			t.Errorf("the reply %s ran in %q, want %s in stress_test", msgs[1].ID, msgs[1].Phase, turn.MessageID)
		}
	})
}

// TestAFirstTurnOnAStaleGuessStartsAgain (PostgreSQL): a session's first turn starts on the
// session as this replica created it; when another replica has moved the session since,
// the turn is started again on what the begin's read found, runs in the session's new
// phase, and the restart is counted for operators. A session nobody touched starts once.
func TestAFirstTurnOnAStaleGuessStartsAgain(t *testing.T) {
	st := storetest.Postgres(t)
	other := storetest.Another(t, st)
	up := &fakeUpstream{scripts: []script{{deltas: []string{reply("")}}}}
	restarts := &restartCount{Metrics: report.Discard()}
	h := harnessOnStore(t, st, up, restarts)
	orch := h.orch
	ctx := context.Background()

	cases := []struct {
		name     string
		moved    bool
		restarts int64
		phase    string
	}{
		{"a session nobody touched", false, 0, "strategy"},
		{"a session another replica moved", true, 1, "stress_test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sess, err := orch.CreateSession(ctx, "u1", "t", "en")
			if err != nil {
				t.Fatal(err)
			}
			if tc.moved {
				moved := *sess
				moved.Phase = "stress_test"
				if err := other.UpdateSession(ctx, &moved); err != nil {
					t.Fatal(err)
				}
			}
			before := restarts.n.Load()
			turn, err := orch.HandleMessage(ctx, Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: "hello"}})
			if err != nil {
				t.Fatal(err)
			}
			evs := h.follow(turn.MessageID)
			if !strings.Contains(string(evs[len(evs)-1].Data), `"reply_len"`) {
				t.Fatalf("the turn did not complete: %s", evs[len(evs)-1].Data)
			}
			if n := restarts.n.Load() - before; n != tc.restarts {
				t.Errorf("%d restarts counted, want %d", n, tc.restarts)
			}
			msg, err := st.GetMessage(ctx, turn.MessageID, "u1")
			if err != nil || msg.Phase != tc.phase {
				t.Errorf("the turn ran in phase %q (%v), want %q", msg.Phase, err, tc.phase)
			}
		})
	}
}
