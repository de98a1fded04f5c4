package orchestration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// The database cost of a turn, in round trips (statements, BEGINs and COMMITs), as
// ceilings a change must not raise unnoticed (docs/performance.md, what a turn costs the database). The turns: a session's
// first message and its second, each 60 content deltas, a GenUI card and a state patch that
// drafts a strategy (most strategy-phase turns record one). The
// event log's group commits are counted apart: how many there are depends on how the deltas
// arrive (here all at once), so they get a looser ceiling than the rest, which is fixed.
const (
	maxEventLogCommits = 4 // working and routed with the first delta (held until the begin commits), the rest, the terminal event (3 seen); one more when a batch splits
	// POST /sessions: the session's INSERT, prepared (as a statement with arguments that
	// lib/pq parses in a round trip of its own before it binds and runs it, it was two).
	maxSessionRoundTrips = 1
)

// eventCommitStatements begin the event log's commit statements: one message's deltas,
// several messages' deltas, any other batch.
var eventCommitStatements = []string{
	"WITH u AS ( UPDATE messages m SET last_event_id = $3::bigint",
	"WITH r AS ( SELECT * FROM unnest(string_to_array($1::text",
	"WITH v AS ( SELECT v.*, r.first FROM unnest(",
}

// turnCeilings are each turn's ceilings. begin is POST …/messages until the answer: the
// session read (with its conflicts and what the plan would find), then the turn's rows,
// queued and the session's counters if the session is still as read; in a session this
// replica created and nobody has written since, only the write, which checks what the read
// would have found. other is the whole turn but its event commits: the begin and the plan's
// reads of what the begin saw exists (none in a new session with no stored prompts; from
// the second turn on the history and the strategy the first turn drafted). The settle, the
// session and the strategy it drafted, rides on the terminal event's commit (it was a
// fenced statement of its own, and before that a transaction of seven round trips).
var turnCeilings = []struct{ begin, other int64 }{{1, 1}, {2, 4}}

func TestDatabaseCostOfATurn(t *testing.T) {
	st, counter := storetest.PostgresCounted(t)
	var deltas []string
	text := reply("<AGENT_UI_JSON>{\"type\":\"choice_prompt\",\"question\":\"Which market?\",\"options\":[{\"label\":\"BTC\",\"value\":\"btc\"}]}</AGENT_UI_JSON>" +
		"<AGENT_STATE_PATCH>{\"summary\":\"a draft\",\"strategy_draft\":{\"name\":\"Momentum\",\"spec\":{\"fast\":5}}}</AGENT_STATE_PATCH>")
	for len(text) > 0 {
		n := min(24, len(text))
		deltas, text = append(deltas, text[:n]), text[n:]
	}
	up := &fakeUpstream{scripts: []script{{deltas: deltas}}}
	h := harnessOnStore(t, st, up, nil)
	orch := h.orch
	ctx := context.Background()
	sessCtx, sessCost := counter.Scope(ctx)
	sess, err := orch.CreateSession(sessCtx, "u1", "t", "en")
	if err != nil {
		t.Fatal(err)
	}
	if c := sessCost(); c.RoundTrips() > maxSessionRoundTrips {
		t.Errorf("creating a session costs %d round trips (%d statements, %d parsed first), over the ceiling %d",
			c.RoundTrips(), c.Statements, c.Parses, maxSessionRoundTrips)
	}
	for i, c := range turnCeilings {
		t.Run(fmt.Sprintf("turn %d", i+1), func(t *testing.T) {
			// A delta the producer sends after a pause is committed before it goes on
			// (eventlog's nudge), so a machine that stalls the producer mid-reply (a loaded
			// CI runner) adds commits the design does not make. The ceiling is the design's:
			// a turn over it is tried again, twice, in a fresh session brought to the same
			// turn, and only a turn over it every time fails.
			var last string
			for try := range 3 {
				sid := sess.ID
				if try > 0 {
					sid = sessionAtTurn(t, h, orch, i)
				}
				if last = costOfTurn(t, h, counter, orch, sid, c.begin, c.other); last == "" {
					return
				}
			}
			t.Error(last)
		})
	}
}

// sessionAtTurn is a new session that has had turns turns, for a cost measured again.
func sessionAtTurn(t *testing.T, h *harness, orch *Orchestrator, turns int) string {
	t.Helper()
	sess, err := orch.CreateSession(context.Background(), "u1", "t", "en")
	if err != nil {
		t.Fatal(err)
	}
	for range turns {
		turn, err := orch.HandleMessage(context.Background(), Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: "Draft a momentum strategy"}})
		if err != nil {
			t.Fatal(err)
		}
		h.follow(turn.MessageID)
	}
	return sess.ID
}

// costOfTurn runs one turn in session sessionID and checks its database cost against the
// ceilings: maxBegin for the begin, maxOther for the round trips that are not event commits.
// It returns why the turn is over them, "" when it is not.
func costOfTurn(t *testing.T, h *harness, counter *storetest.Counter, orch *Orchestrator, sessionID string, maxBegin, maxOther int64) string {
	ctx := context.Background()
	before := counter.Snapshot()
	// The begin is what the request itself sends: the turn it starts reads its plan on its
	// own goroutine meanwhile, and those reads are counted with the rest of the turn.
	reqCtx, beginCost := counter.Scope(ctx)
	turn, err := orch.HandleMessage(reqCtx, Request{Request: session.Request{UserID: "u1", SessionID: sessionID, Text: "Draft a momentum strategy"}})
	if err != nil {
		t.Fatal(err)
	}
	begin := beginCost()
	if begin.Statements == 0 {
		t.Fatal("the begin's statements were not counted: HandleMessage no longer passes the request's context to the store")
	}
	evs := h.follow(turn.MessageID)
	if !strings.Contains(string(evs[len(evs)-1].Data), `"reply_len"`) {
		t.Fatalf("the turn did not complete: %s", evs[len(evs)-1].Data)
	}
	whole := counter.Snapshot().Sub(before)
	stmts := counter.Statements(before.Statements)
	commits := 0
	for _, q := range stmts {
		if slices.ContainsFunc(eventCommitStatements, func(p string) bool { return strings.HasPrefix(q, p) }) {
			commits++
		}
	}
	other := whole.RoundTrips() - int64(commits)
	t.Logf("database cost of the turn (%d events): begin %d round trips (%d statements, %d transactions); whole turn %d round trips: %d event-log commits and %d others (%d statements, %d transactions)",
		len(evs), begin.RoundTrips(), begin.Statements, begin.Commits, whole.RoundTrips(), commits, other, whole.Statements, whole.Commits)
	if begin.RoundTrips() > maxBegin || other > maxOther || commits > maxEventLogCommits {
		return fmt.Sprintf("the turn costs %d round trips to begin, %d event-log commits and %d other round trips, over the ceilings %d, %d and %d; its statements:\n%s",
			begin.RoundTrips(), commits, other, maxBegin, maxEventLogCommits, maxOther, strings.Join(stmts, "\n"))
	}
	return ""
}
