package orchestration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/lease"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// Request is what a client asked for (a message in a session, or in a new one, untitled
// until its first completed turn names it) with the request's runtime policy.
type Request struct {
	session.Request
	// Policy is the request's runtime_policy ([ParseRuntimePolicy]); nil leaves the
	// server's settings and the phase's defaults.
	Policy *RuntimePolicy
}

// Turn names a started (or, for a repeated client_request_id, an earlier) generation.
type Turn struct {
	SessionID string
	MessageID string
	RequestID string
	// Duplicate is true when the request repeated a client_request_id: no new generation
	// was started and MessageID is the earlier message.
	Duplicate bool
	// Message is the assistant message as the turn's first transaction left it (a copy), so
	// that a caller streaming the reply at once need not read it back.
	Message store.Message
}

// errNotBegun is the cause of a turn started on its session's read whose begin then did
// not commit (the database failed, or it lost a race and read again): nothing of it
// reached the log, so it ends without a word.
var errNotBegun = errors.New("orchestration: the turn's begin did not commit")

// turn is what a running generation carries through its steps: fixed when it begins, never
// filled in by later steps (each step returns its own values). It starts once its session
// has been read, before its begin commits; em and freeSlot are set once it has committed, and
// ready is closed then (or when it did not commit, em left nil).
type turn struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	begun   *session.Begun
	text    string
	policy  *RuntimePolicy // the request's runtime_policy, nil for none
	started time.Time
	ready   chan struct{}
	em      *events.Emitter
	// freeSlot gives the turn's concurrency slots back (once), before the terminal event,
	// so a client that sees the end and posts again finds them free.
	freeSlot func()
	// working is set once status working is out; only the turn's own goroutine reads it.
	working bool
	traces  traceBook // the requests sent upstream, until recorded
}

// writeCtx is the context for writing the turn's own events and rows: it survives the
// turn's cancellation, because a cancelled turn must still write its tail.
func (t *turn) writeCtx() context.Context { return context.WithoutCancel(t.ctx) }

// HandleMessage runs step 1 (session: the user's message, the assistant message claimed by
// this replica's lease, its log started by status queued, written at once) and the rest
// of the turn in the background. The rest starts as soon as step 1 has read the session
// and its checks have passed, while step 1 writes and commits: the plan and the upstream
// call overlap the commit, and only the turn's events wait for it (commit before deliver
// holds). It returns once the turn is queued; the caller follows the message's events. The
// generation never depends on ctx.
func (o *Orchestrator) HandleMessage(ctx context.Context, req Request) (*Turn, error) {
	if err := o.acquire(req.UserID); err != nil {
		return nil, err
	}
	defer o.wg.Done() // acquire's count covers this call; each started turn holds its own
	b, err := o.begin(ctx, req)
	switch {
	case err != nil:
		o.freeSlot(req.UserID)
		return nil, err
	case b.Duplicate:
		o.freeSlot(req.UserID)
		return &Turn{SessionID: b.Session.ID, MessageID: b.Assistant.ID, RequestID: b.Assistant.RequestID, Duplicate: true, Message: *b.Assistant}, nil
	}
	o.metrics.TurnStarted()
	return &Turn{SessionID: b.Session.ID, MessageID: b.Assistant.ID, RequestID: req.RequestID, Message: *b.Assistant}, nil
}

// begin runs step 1 and starts the turn on its read (again on a retried race's read); it
// opens the turn once step 1 has committed and aborts it when step 1 did not, or found the
// request to be a repeat.
func (o *Orchestrator) begin(ctx context.Context, req Request) (*session.Begun, error) {
	var t *turn
	b, err := o.core.Begin(ctx, req.Request, o.keeper.Lease(), func(b *session.Begun) {
		if t != nil { // locked in again: a lost race, or a guess the database did not confirm
			t.abort()
			o.metrics.TurnRestarted()
		}
		t = o.start(b, req)
	})
	if err == nil && !b.Duplicate {
		if t == nil { // a store that never called Locked: start after the commit
			t = o.start(b, req)
		}
		if err = o.open(t, req.UserID); err != nil {
			// The message stays pending under a lease nobody renews: the next sweep ends it.
			o.logger.Error("a begun turn could not start; the sweep will end it", "message_id", b.Assistant.ID, "err", err)
		}
	}
	if (err != nil || b.Duplicate) && t != nil {
		t.abort()
	}
	return b, err
}

// start starts the turn's goroutine on its session as read: a context derived from the
// orchestrator's base (not from any request) and cancelled by the hard turn timeout. The
// timeout is a timer on the turn's own context rather than a context of its own: each
// level of a generation's context chain is a context, its channel and its parent's map of
// children, held for as long as the reply streams (docs/performance.md).
func (o *Orchestrator) start(b *session.Begun, req Request) *turn {
	ctx, cancel := context.WithCancelCause(o.base)
	if o.cfg.TurnTimeout > 0 {
		timer := time.AfterFunc(o.cfg.TurnTimeout, func() { cancel(errTurnTimeout) })
		inner := cancel
		cancel = func(cause error) { inner(cause); timer.Stop() }
	}
	t := &turn{ctx: ctx, cancel: cancel, begun: b, text: req.Text, policy: req.Policy, started: time.Now(), ready: make(chan struct{})}
	o.wg.Add(1) // HandleMessage's own count is held: never from zero while Shutdown waits
	go o.run(t)
	return t
}

// open lets a committed turn's events through: it opens the event log after the committed
// queued event, has the keeper renew the turn's lease (and stop it on a cancel, a lost
// lease or an outage), and gives it its slots to free.
func (o *Orchestrator) open(t *turn, userID string) error {
	id := t.begun.Assistant.ID
	w, err := o.log.Open(id, eventlog.Opening{
		LastSeq: t.begun.Events[len(t.begun.Events)-1].Seq, Committed: t.begun.Events,
		OnLost: func() { t.cancel(lease.ErrLost) },
	})
	if err != nil {
		return fmt.Errorf("orchestration: open event log: %w", err)
	}
	o.keeper.Track(id, t.cancel)
	t.em = events.NewEmitter(w, events.Base{MessageID: id, RequestID: t.begun.Assistant.RequestID}, o.route())
	t.freeSlot = sync.OnceFunc(func() { o.freeSlot(userID) })
	close(t.ready)
	return nil
}

// abort stops a turn whose begin did not commit.
func (t *turn) abort() {
	t.cancel(errNotBegun)
	close(t.ready)
}

// committed waits for the turn's begin and reports whether it committed.
func (t *turn) committed() bool {
	<-t.ready // closed by HandleMessage once Begin has returned, whatever it returned
	return t.em != nil
}

// emitWorking emits status working once, after the begin has committed, before any other
// event of the turn's.
func (t *turn) emitWorking() error {
	if t.working {
		return nil
	}
	if !t.committed() {
		return errNotBegun
	}
	t.working = true
	return t.em.Working(t.ctx, t.begun.Session.Phase)
}

// route is what a turn reports before an endpoint answers: the configured primary.
func (o *Orchestrator) route() events.Route {
	model := o.cfg.Model
	return events.Route{Provider: o.cfg.Provider, ResolvedModel: &model, EndpointID: o.cfg.EndpointID}
}

// run is the turn's outline (orchestrator.md §2), after step 1 in HandleMessage: the plan
// (prompt) and its first request, which may start before step 1 has committed; then, on a
// goroutine of their own, the attempts (stream, with the correction retry), settle
// (postprocess), carry over (carryover, when the phase moves), and complete or fail.
//
// The attempts get a fresh goroutine because a goroutine keeps the stack it grew to for as
// long as it lives, and a generation lives as long as its reply streams. Planning and
// building the request (templates, JSON) grow a stack to 16 KiB; the goroutine that then
// waits on the upstream for the whole reply grows to 8 KiB and no further
// (docs/performance.md). That is 8 KiB less per concurrent generation, and as much again of the
// collector's heap goal, which counts stacks.
func (o *Orchestrator) run(t *turn) {
	defer o.wg.Done()
	p := o.prepare(t)
	o.wg.Add(1) // run's own count is held: never from zero while Shutdown waits
	go o.generate(t, p)
}

// prepared is step 2's result: the turn's plan and its first attempt's request.
type prepared struct {
	plan   *prompt.Plan // nil when planning failed
	policy events.RuntimePolicy
	first  *upstream.Request // the first attempt's request, until it is taken
	rules  stream.Rules
	sink   *turnSink
	err    error // why the turn cannot be planned
}

// prepare is step 2: the plan, and the first attempt's request built from it.
func (o *Orchestrator) prepare(t *turn) *prepared {
	plan, err := o.planner.Plan(t.ctx, prompt.Turn{Begun: t.begun, UserText: t.text, MaxOutputTokens: t.policy.requestedCap()})
	if err != nil {
		return &prepared{err: err}
	}
	// Nothing reads the begun's artifacts (the plan keeps its phase's block) or its user
	// message (the plan has left it out of the history) again, and a generation need not
	// hold them while its reply streams: a user's message may be long.
	t.begun.Artifacts, t.begun.User = nil, nil
	p := &prepared{plan: plan, policy: o.merged(t.policy, plan), sink: &turnSink{t: t, first: o.metrics.FirstDelta}}
	p.rules = o.rules(plan, p.policy)
	first, err := plan.Request(nil)
	p.first, p.err = &first, err
	return p
}

// requests builds each attempt's request ([stream.Requests]); the first one's was built
// with the plan.
func (p *prepared) requests(correction []thinkingml.Issue) (*upstream.Request, error) {
	if first := p.first; first != nil {
		p.first = nil
		return first, nil
	}
	req, err := p.plan.Request(correction)
	return &req, err
}

// generate is step 3, the attempts, whose events wait for the begin to commit (turnSink),
// and the turn's end. Everything it passes on was made by prepare: its own frame is on the
// stack the generation waits on.
func (o *Orchestrator) generate(t *turn, p *prepared) {
	defer o.wg.Done()
	defer t.traces.wait() // the redactions the turn started are over
	defer t.cancel(nil)
	var out *stream.Outcome
	err := p.err
	if err == nil {
		out, err = o.streams.Attempts(t.ctx, p.requests, p.sink, p.rules)
	}
	o.end(t, p, out, err)
}

// end is steps 4 and 5 once the attempts are over (out is nil when none ran): settle,
// carry over, and complete, or fail.
func (o *Orchestrator) end(t *turn, p *prepared, out *stream.Outcome, err error) {
	plan, policy := p.plan, p.policy
	if out == nil {
		out = &stream.Outcome{}
	}
	if !t.committed() {
		return // the turn never existed
	}
	defer t.freeSlot() // normally already freed before the terminal event
	defer o.keeper.Untrack(t.begun.Assistant.ID)
	if werr := t.emitWorking(); err == nil {
		err = werr // a turn that failed before its first event still shows working first
	}
	if err != nil {
		o.fail(t, plan, *out, err)
		return
	}
	settled := postprocess.Settle(postprocess.Input{
		Handler: plan.Handler, Phase: plan.Phase, Stage: plan.Stage, Block: plan.Block,
		Outcome: *out, Policy: stream.Policy(policy.ReplyPolicy), GenUI: o.genui, Skills: plan.Skills, Locale: plan.Locale,
	})
	settled.Metadata.RuntimePolicy = &policy
	change, pending, err := o.persist(t, plan, out.Result, &settled)
	if err != nil {
		o.fail(t, plan, *out, err)
		return
	}
	o.complete(t, plan, *out, settled, change, pending)
}

// rules are how the stream step judges this turn's attempts, by its runtime policy.
func (o *Orchestrator) rules(plan *prompt.Plan, policy events.RuntimePolicy) stream.Rules {
	opts := postprocess.Options{Locale: plan.Locale, SerpQueriesOptional: policy.SerpOptional}
	return stream.Rules{
		Policy:   stream.Policy(policy.ReplyPolicy),
		Judge:    func(text string) stream.Check { return postprocess.Check(text, opts) },
		Fallback: func() (string, error) { return postprocess.EmptyFallback(plan.Skills, plan.Locale) },
	}
}

// turnSink is the turn's emitter as the stream step sees it: each event first waits for
// the begin to commit (and puts status working before the first), and the first delta's
// delay is reported to the metrics.
type turnSink struct {
	t     *turn
	first func(time.Duration)
	seen  bool
}

// Routed implements [stream.Sink].
func (s *turnSink) Routed(ctx context.Context, provider string, endpointID int, model, upstreamRequestID string) error {
	if err := s.t.emitWorking(); err != nil {
		return err
	}
	return s.t.em.Routed(ctx, provider, endpointID, model, upstreamRequestID)
}

// Delta implements [stream.Sink].
func (s *turnSink) Delta(ctx context.Context, text string) error {
	if err := s.t.emitWorking(); err != nil {
		return err
	}
	if s.seen {
		s.t.recordTraces(false) // a later request's (a retry's): they ride with the delta's commit
		return s.t.em.Delta(ctx, text)
	}
	s.seen = true
	s.first(time.Since(s.t.started))
	err := s.t.em.Delta(ctx, text) // committed and delivered (Emitter.Delta nudges)
	// The request's trace goes with the next commit, off the way of the one the client
	// waits on (eventlog.Writer.Record).
	s.t.recordTraces(true)
	return err
}

// ToolCall implements [stream.Sink].
func (s *turnSink) ToolCall(ctx context.Context, serverLabel, name, state string) error {
	if err := s.t.emitWorking(); err != nil {
		return err
	}
	return s.t.em.ToolCall(ctx, serverLabel, name, state)
}

// Deliver implements [stream.Sink].
func (s *turnSink) Deliver(ctx context.Context) {
	if s.t.committed() {
		s.t.em.Deliver(ctx)
	}
}

// Sent implements [stream.Sink].
func (s *turnSink) Sent(sent stream.Sent) { s.t.traces.add(sent) }

// Retrying implements [stream.Sink].
func (s *turnSink) Retrying(ctx context.Context, attempt int, reason string) error {
	if err := s.t.emitWorking(); err != nil {
		return err
	}
	return s.t.em.Retrying(ctx, attempt, reason)
}

// keep makes a store error of the turn's own writes wait out an unreachable database,
// within the turn's life.
func (t *turn) keep(fn func(ctx context.Context) error) error {
	return store.WhileUnavailable(t.ctx, func() error { return fn(t.writeCtx()) })
}
