package orchestration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/mcpcontext"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
	"github.com/phaseflow/phaseflow/upstream"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

// reply is a valid English ThinkingML reply with extra text inside <final>.
func reply(final string) string {
	return "<thinking>\n<phase id=\"1\"><title>Plan</title>\nRead the request and answer it.\n</phase>\n</thinking>\n" +
		"<final>\nHere is the answer you asked for, written out in full.\n" + final +
		"\n<!-- <serp_queries>\n[\"momentum strategy\"]\n</serp_queries> -->\n</final>"
}

// fakeUpstream plays one script per request, in order; a script is text deltas, then an
// error (nil: completed) or, with hang, silence until the turn is cancelled.
type fakeUpstream struct {
	mu       sync.Mutex
	scripts  []script
	calls    int
	requests []upstream.Request // every request received, in order
	// called, when set, receives a value on a request if it has room (it never blocks).
	called chan struct{}
}

type script struct {
	refuse error               // fails the request before any event
	tools  []upstream.ToolCall // MCP calls the upstream runs before the text
	deltas []string
	err    error
	hang   bool
}

func (f *fakeUpstream) Stream(ctx context.Context, req upstream.Request) iter.Seq2[upstream.Event, error] {
	f.mu.Lock()
	sc := f.scripts[min(f.calls, len(f.scripts)-1)]
	f.calls++
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	select {
	case f.called <- struct{}{}: // nil: never ready
	default:
	}
	return func(yield func(upstream.Event, error) bool) {
		if sc.refuse != nil {
			yield(upstream.Event{}, sc.refuse)
			return
		}
		if !yield(upstream.Event{Kind: upstream.EventCreated, ResponseID: "resp_1", Model: "m"}, nil) {
			return
		}
		for i := range sc.tools {
			c := sc.tools[i]
			if !yield(upstream.Event{Kind: upstream.EventToolCallStarted, Tool: &c}, nil) ||
				!yield(upstream.Event{Kind: upstream.EventToolCallDone, Tool: &c}, nil) {
				return
			}
		}
		for _, d := range sc.deltas {
			if !yield(upstream.Event{Kind: upstream.EventTextDelta, Delta: d}, nil) {
				return
			}
		}
		switch {
		case sc.hang:
			<-ctx.Done()
			yield(upstream.Event{}, ctx.Err())
		case sc.err != nil:
			yield(upstream.Event{}, sc.err)
		default:
			yield(upstream.Event{Kind: upstream.EventCompleted, ResponseID: "resp_1"}, nil)
		}
	}
}

// harness is an orchestrator on a real SQLite store and event log with a fake upstream.
type harness struct {
	t    *testing.T
	st   *store.Store
	log  *eventlog.Log
	orch *Orchestrator
}

func newHarness(t *testing.T, up *fakeUpstream) *harness {
	t.Helper()
	return newHarnessOn(t, up, func(st *store.Store) Store { return st }, 0)
}

// newHarnessOn is newHarness with the orchestrator on wrap(st) and at most maxTurns
// concurrent turns (0: the default).
func newHarnessOn(t *testing.T, up *fakeUpstream, wrap func(*store.Store) Store, maxTurns int) *harness {
	t.Helper()
	st := storetest.SQLite(t)
	h := assemble(t, st, wrap(st), up, Config{Provider: "fake", Model: "m", EndpointID: 1, IdleTimeout: 5 * time.Second, RecoverAll: true, MaxConcurrentTurns: maxTurns}, nil)
	if _, err := h.orch.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h
}

// harnessOnStore is an orchestrator on st (a store the test set up itself, such as a
// PostgreSQL one whose statements it counts), with m receiving its turn metrics (nil:
// none). It is not started: no recovery or lease renewal adds statements of its own.
func harnessOnStore(t *testing.T, st *store.Store, up *fakeUpstream, m Metrics) *harness {
	t.Helper()
	return assemble(t, st, st, up, Config{Provider: "fake", Model: "m", IdleTimeout: 5 * time.Second}, m)
}

// assemble builds the orchestrator of cfg on s (st, or a wrapper of it) with an event log on
// st, and shuts both down when the test ends.
func assemble(t *testing.T, st *store.Store, s Store, up *fakeUpstream, cfg Config, m Metrics) *harness {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	log := eventlog.New(st, "replica-test", logger, eventlog.Options{})
	key, err := mcpcontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := mcpcontext.NewSigner(key, "")
	if err != nil {
		t.Fatal(err)
	}
	orch := New(cfg, Deps{Store: s, Log: log, Upstream: up, Skills: skills.New(), Handlers: handlers.New(handlers.Criteria{}), Signer: signer, Logger: logger, Metrics: m})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		orch.Shutdown(ctx)
		_ = log.Close(ctx)
	})
	return &harness{t: t, st: st, log: log, orch: orch}
}

// follow reads a message's events to its terminal event.
func (h *harness) follow(id string) []store.Event {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur := h.log.Follow(id, 0, 0)
	var out []store.Event
	for !cur.Ended() {
		evs, wait, err := cur.Next(ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, evs...)
		if cur.Ended() {
			break
		}
		select {
		case <-wait:
		case <-ctx.Done():
			h.t.Fatalf("message %s: no terminal event after %d events", id, len(out))
		}
	}
	return out
}

// states lists the status states and other event names of a stream, in order.
func states(evs []store.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Name == events.Status {
			var d events.StatusData
			_ = json.Unmarshal(ev.Data, &d)
			out = append(out, d.State)
			continue
		}
		if len(out) == 0 || out[len(out)-1] != ev.Name {
			out = append(out, ev.Name)
		}
	}
	return out
}

func TestTurn(t *testing.T) {
	invalid := "<thinking>no phases here</thinking>"
	backtest := upstream.ToolCall{ID: "c1", ServerLabel: "strategy_engine", Name: "run_backtest", Arguments: `{"window":20}`, Output: `{"sharpe":1.2}`}
	ready := `{"strategy":{"strategy_id":"s-1","strategy_status":"validated","backtest_status":"completed","advance_to_stress_test":false}}`
	move := "<AGENT_STATE_PATCH>{\"strategy_status\":\"confirmed\",\"advance_to_stress_test\":true}</AGENT_STATE_PATCH>"
	cases := []struct {
		name       string
		scripts    []script
		artifacts  string // the session's artifacts before the turn
		cancel     bool   // cancel once the first delta is out
		wantStates []string
		wantStatus string // the message's final status
		wantCode   string // the error event's code
		wantPhase  string // the session's phase after the turn
		check      func(t *testing.T, m *store.Message)
		wantCalls  string // the stored MCP calls, "name:attempt:outcome" joined by spaces
	}{
		{name: "a valid reply completes", scripts: []script{{deltas: []string{reply("")}}},
			wantStates: []string{"queued", "working", "routed", "content_delta", "completed"}, wantStatus: store.StatusCompleted, wantPhase: "strategy"},
		{name: "refused, then retried", scripts: []script{{deltas: []string{invalid}}, {deltas: []string{reply("")}}},
			wantStates: []string{"queued", "working", "routed", "content_delta", "retrying", "routed", "content_delta", "completed"},
			wantStatus: store.StatusCompleted, wantPhase: "strategy",
			check: func(t *testing.T, m *store.Message) {
				if !strings.Contains(string(m.Metadata), `"attempts":2`) ||
					!strings.Contains(string(m.Metadata), `"refused_attempts":[{"attempt":1,"problems":[{"code":"thinking_without_phase"`) {
					t.Errorf("metadata %s, want attempts 2 and why attempt 1 was refused", m.Metadata)
				}
			}},
		{name: "refused twice", scripts: []script{{deltas: []string{invalid}}, {deltas: []string{invalid}}},
			wantStates: []string{"queued", "working", "routed", "content_delta", "retrying", "routed", "content_delta", "error"},
			wantStatus: store.StatusFailed, wantCode: failure.ReplyInvalid, wantPhase: "strategy",
			check: func(t *testing.T, m *store.Message) {
				var meta events.FailureMetadata
				if err := json.Unmarshal(m.Metadata, &meta); err != nil || len(meta.RefusedAttempts) != 2 ||
					meta.RefusedAttempts[1].Attempt != 2 || len(meta.RefusedAttempts[1].Problems) == 0 {
					t.Errorf("metadata %s, want both refused attempts with their problems", m.Metadata)
				}
			}},
		{name: "an empty reply gets the fallback", scripts: []script{{}},
			wantStates: []string{"queued", "working", "routed", "content_delta", "completed"}, wantStatus: store.StatusCompleted, wantPhase: "strategy",
			check: func(t *testing.T, m *store.Message) {
				if !strings.Contains(string(m.Metadata), `"fallback":true`) || !strings.Contains(m.Content, "<final>") {
					t.Errorf("content %q metadata %s, want the fallback reply", m.Content, m.Metadata)
				}
			}},
		{name: "a completed phase moves", scripts: []script{{deltas: []string{reply(move)}}}, artifacts: ready,
			wantStates: []string{"queued", "working", "routed", "content_delta", "phase_changed", "completed"},
			wantStatus: store.StatusCompleted, wantPhase: "stress_test"},
		{name: "cancel keeps the partial text", scripts: []script{{deltas: []string{"<thinking>part"}, hang: true}}, cancel: true,
			wantStates: []string{"queued", "working", "routed", "content_delta", "error"},
			wantStatus: store.StatusCancelled, wantCode: failure.Cancelled, wantPhase: "strategy",
			check: func(t *testing.T, m *store.Message) {
				if m.Content != "<thinking>part" || strings.Contains(string(m.Metadata), "fallback_reply") {
					t.Errorf("content %q metadata %s, want the partial text and no fallback (the user stopped it)", m.Content, m.Metadata)
				}
			}},
		{name: "a refused attempt's tool calls are kept", scripts: []script{
			{tools: []upstream.ToolCall{backtest}, deltas: []string{invalid}}, {deltas: []string{reply("")}}},
			wantStates: []string{"queued", "working", "routed", "tool_call", "tool_call", "content_delta", "retrying", "routed", "content_delta", "completed"},
			wantStatus: store.StatusCompleted, wantPhase: "strategy",
			check: func(t *testing.T, m *store.Message) {
				if !strings.Contains(string(m.ToolCalls), `"name":"run_backtest"`) || !strings.Contains(string(m.ToolCalls), `"attempt":1`) {
					t.Errorf("tool_calls %s, want the refused attempt's run_backtest with attempt 1", m.ToolCalls)
				}
			}, wantCalls: "run_backtest:1:completed"},
		{name: "a cancelled turn's tool calls are kept", scripts: []script{{tools: []upstream.ToolCall{backtest}, deltas: []string{"<thinking>part"}, hang: true}},
			cancel:     true,
			wantStates: []string{"queued", "working", "routed", "tool_call", "tool_call", "content_delta", "error"},
			wantStatus: store.StatusCancelled, wantCode: failure.Cancelled, wantPhase: "strategy",
			check: func(t *testing.T, m *store.Message) {
				if !strings.Contains(string(m.ToolCalls), `"name":"run_backtest"`) {
					t.Errorf("tool_calls %s, want the run_backtest that ran before the cancel", m.ToolCalls)
				}
			}, wantCalls: "run_backtest:1:cancelled"},
		{name: "an upstream error after partial text", scripts: []script{{deltas: []string{"<thinking>half"}, err: &upstream.Error{Kind: upstream.KindProvider, Message: "secret provider text"}}},
			wantStates: []string{"queued", "working", "routed", "content_delta", "error"},
			wantStatus: store.StatusFailed, wantCode: failure.ProviderError, wantPhase: "strategy",
			check: func(t *testing.T, m *store.Message) {
				if m.Content != "<thinking>half" || strings.Contains(string(m.Error), "secret") {
					t.Errorf("content %q error %s, want the partial text and no provider text", m.Content, m.Error)
				}
				var meta events.FailureMetadata
				_ = json.Unmarshal(m.Metadata, &meta)
				if !strings.Contains(meta.FallbackReply, "<final>") || strings.Contains(m.Content, meta.FallbackReply) {
					t.Errorf("metadata %s, want the fallback reply kept apart from the partial text", m.Metadata)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &fakeUpstream{scripts: tc.scripts})
			ctx := context.Background()
			sess, err := h.orch.CreateSession(ctx, "u1", "t", "en")
			if err != nil {
				t.Fatal(err)
			}
			if tc.artifacts != "" {
				sess.Artifacts = store.JSON(tc.artifacts)
				if err := h.st.UpdateSession(ctx, sess); err != nil {
					t.Fatal(err)
				}
			}
			turn, err := h.orch.HandleMessage(ctx, Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: "hello there", RequestID: "r1"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.cancel {
				h.cancelAfterFirstDelta(turn.MessageID)
			}
			evs := h.follow(turn.MessageID)
			if got := strings.Join(states(evs), " "); got != strings.Join(tc.wantStates, " ") {
				t.Fatalf("events %s\nwant   %s", got, strings.Join(tc.wantStates, " "))
			}
			h.checkEnd(turn.MessageID, evs, tc.wantStatus, tc.wantCode, tc.wantPhase, sess.ID, tc.check)
			calls, err := h.st.ListMCPCalls(ctx, turn.MessageID, "u1")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range calls {
				got = append(got, fmt.Sprintf("%s:%d:%s", c.Name, c.Attempt, c.Outcome))
			}
			if strings.Join(got, " ") != tc.wantCalls {
				t.Fatalf("stored MCP calls %q, want %q", got, tc.wantCalls)
			}
		})
	}
}

// cancelAfterFirstDelta cancels a message once its first delta is committed.
func (h *harness) cancelAfterFirstDelta(id string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur := h.log.Follow(id, 0, 0)
	for {
		evs, wait, err := cur.Next(ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Name == events.ContentDelta {
				if err := h.orch.Cancel(ctx, id, "u1"); err != nil {
					h.t.Fatal(err)
				}
				return
			}
		}
		<-wait
	}
}

// checkEnd checks the stored message and session after a turn.
func (h *harness) checkEnd(id string, evs []store.Event, status, code, phase, sessionID string, check func(*testing.T, *store.Message)) {
	h.t.Helper()
	ctx := context.Background()
	m, err := h.st.GetMessage(ctx, id, "u1")
	if err != nil {
		h.t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if m.Status != status || m.LastEventID != last.Seq {
		h.t.Fatalf("message %s last_event_id %d, want %s and %d", m.Status, m.LastEventID, status, last.Seq)
	}
	if code != "" {
		var d events.ErrorData
		if err := json.Unmarshal(last.Data, &d); err != nil || d.Code != code {
			h.t.Fatalf("error event %s, want code %s", last.Data, code)
		}
	}
	sess, err := h.st.GetSession(ctx, sessionID, "u1")
	if err != nil || sess.Phase != phase {
		h.t.Fatalf("session phase %v (%v), want %s", sess, err, phase)
	}
	if check != nil {
		check(h.t, m)
	}
	h.allSlotsFree()
}

// allSlotsFree fails the test unless every turn slot can be taken: none is still held
// after a turn's terminal event.
func (h *harness) allSlotsFree() {
	h.t.Helper()
	n := h.orch.cfg.MaxConcurrentTurns
	for i := range n {
		if err := h.orch.limits.Acquire(fmt.Sprint("probe-", i), 0); err != nil {
			h.t.Fatalf("only %d of %d turn slots free after the terminal event: %v", i, n, err)
		}
		defer h.orch.limits.Release(fmt.Sprint("probe-", i))
	}
}
