package orchestration

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// restartCount is a Metrics that counts restarts only.
type restartCount struct {
	noMetrics
	n atomic.Int64
}

func (r *restartCount) TurnRestarted() { r.n.Add(1) }

// TestAFirstTurnOnAStaleGuessStartsAgain (PostgreSQL): a session's first turn starts on the
// session as this replica created it; when another replica has moved the session since,
// the turn is started again on what the begin's read found, runs in the session's new
// phase, and the restart is counted for operators. A session nobody touched starts once.
func TestAFirstTurnOnAStaleGuessStartsAgain(t *testing.T) {
	st := storetest.Postgres(t)
	other := storetest.Another(t, st)
	up := &fakeUpstream{scripts: []script{{deltas: []string{reply("")}}}}
	restarts := &restartCount{}
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
