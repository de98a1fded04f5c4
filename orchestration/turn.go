package orchestration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/finish"
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
	// Policy is the request's runtime_policy; nil leaves the server's settings and the
	// phase's defaults.
	Policy *prompt.RuntimePolicy
}

// Turn names a started (or, for a repeated client_request_id, an earlier) generation.
type Turn struct {
	SessionID string
	MessageID string
	RequestID string
	// Duplicate is true when the request repeated a client_request_id: no new generation
	// was started and MessageID is the earlier message.
	Duplicate bool
	// Message is the assistant message as the turn's begin wrote it (a copy), so that a
	// caller streaming the reply at once need not read it back.
	Message store.Message
}

// beginAttempts bounds the begins of a turn whose session keeps changing under it.
const beginAttempts = 3

// turn is a running generation: fixed when it begins; each step returns its own values.
type turn struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	begun   *session.Begun
	text    string
	policy  *prompt.RuntimePolicy
	started time.Time
	log     *eventlog.Writer // the message's log, held until the begin has committed
	em      *events.Emitter
	// freeSlot gives the turn's concurrency slots back (once), before the terminal event,
	// so a client that sees the end and posts again finds them free. It is set when the
	// begin commits: until then the slots are the begin's.
	freeSlot func()
}

// writeCtx is the context for writing the turn's own events and rows: it survives the
// turn's cancellation, because a cancelled turn must still write its tail.
func (t *turn) writeCtx() context.Context { return context.WithoutCancel(t.ctx) }

// HandleMessage runs step 1 and starts the rest of the turn in the background; it returns
// once the turn is written (status queued committed), and the caller follows the message's
// events. The generation never depends on ctx.
func (o *Orchestrator) HandleMessage(ctx context.Context, req Request) (*Turn, error) {
	if err := o.acquire(ctx, req.UserID); err != nil {
		return nil, err
	}
	defer o.release() // acquire's hold on the turns' group; each started turn holds its own
	b, err := o.begin(ctx, req)
	switch {
	case err != nil:
		o.limits.Release(req.UserID)
		return nil, err
	case b.Duplicate:
		o.limits.Release(req.UserID)
		return &Turn{SessionID: b.Session.ID, MessageID: b.Assistant.ID, RequestID: b.Assistant.RequestID, Duplicate: true, Message: *b.Assistant}, nil
	}
	o.metrics.TurnStarted()
	return &Turn{SessionID: b.Session.ID, MessageID: b.Assistant.ID, RequestID: req.RequestID, Message: *b.Assistant}, nil
}

// begin is step 1 (session): the session read and the turn's rows prepared, then
// committed. The turn starts on the read, so that its plan and its upstream call overlap
// the write and its commit; its events wait in the log until the commit is known. A session
// that changed before the commit is read again, and the turn started on the old read ends
// without a word: nothing of it reached the log.
func (o *Orchestrator) begin(ctx context.Context, req Request) (*session.Begun, error) {
	for attempt := 1; ; attempt++ {
		b, err := o.core.Begin(ctx, req.Request)
		if err != nil || b.Duplicate {
			return b, err
		}
		t, err := o.start(b.Copy(), req)
		if err != nil {
			return nil, err
		}
		b, err = o.core.Commit(ctx, b, o.keeper.Lease())
		if err != nil || b.Duplicate {
			t.log.Begun(cmp.Or(err, errDuplicate))
			t.cancel(eventlog.ErrNotBegun)
		}
		switch {
		case errors.Is(err, session.ErrChanged) && attempt < beginAttempts:
			o.metrics.TurnRestarted()
			continue
		case err != nil || b.Duplicate:
			return b, err
		}
		o.keeper.Track(b.Assistant.ID, t.cancel)
		t.freeSlot = sync.OnceFunc(func() { o.limits.Release(req.UserID) })
		t.log.Begun(nil)
		return b, nil
	}
}

// errDuplicate is why a turn whose commit met a repeated client_request_id never began.
var errDuplicate = errors.New("orchestration: the request repeats an earlier one")

// start opens the turn's log, held until its begin commits, and starts the turn's
// goroutine on its session as read, with a context of its own (never a request's) cut by
// the hard turn timeout.
func (o *Orchestrator) start(b *session.Begun, req Request) (*turn, error) {
	ctx, cancel := context.WithCancelCause(o.base)
	if o.cfg.TurnTimeout > 0 {
		timer := time.AfterFunc(o.cfg.TurnTimeout, func() { cancel(finish.ErrTurnTimeout) })
		inner := cancel
		cancel = func(cause error) { inner(cause); timer.Stop() }
	}
	t := &turn{ctx: ctx, cancel: cancel, begun: b, text: req.Text, policy: req.Policy, started: time.Now()}
	w, err := o.log.Open(b.Assistant.ID, eventlog.Opening{
		LastSeq: b.Events[len(b.Events)-1].Seq, Committed: b.Events, Unwritten: true,
		OnLost: func() { t.cancel(lease.ErrLost) },
	})
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("orchestration: open event log: %w", err)
	}
	t.log, t.em = w, events.NewEmitter(w, events.Base{MessageID: b.Assistant.ID, RequestID: b.Assistant.RequestID}, o.route())
	o.turns.Go(func() { o.run(t) }) // HandleMessage's hold keeps the group open meanwhile
	return t, nil
}

// route is what a turn reports before an endpoint answers: the configured primary.
func (o *Orchestrator) route() events.Route {
	model := o.cfg.Model
	return events.Route{Provider: o.cfg.Provider, ResolvedModel: &model, EndpointID: o.cfg.EndpointID}
}

// run is the turn's outline after step 1 (docs/turn.md): plan (prompt), attempts
// (stream, with the correction retry), then settle (postprocess) and finish, handed to
// the log (conclude). Nothing but the log is written before the begin has committed.
func (o *Orchestrator) run(t *turn) {
	defer t.cancel(nil)
	e := o.attempts(t)
	if err := t.log.Opened(t.writeCtx()); err != nil {
		return // the turn never existed
	}
	defer o.keeper.Untrack(t.begun.Assistant.ID)
	defer t.freeSlot() // normally freed already, before the terminal event
	o.metrics.FirstDelta(e.firstDelta)
	o.conclude(t, e)
}

// attempts is steps 2 and 3: status working, the plan, and the attempts streamed to the
// client.
func (o *Orchestrator) attempts(t *turn) ending {
	var e ending
	if e.err = t.em.Working(t.ctx, t.begun.Session.Phase); e.err != nil {
		return e
	}
	if e.plan, e.err = o.planner.Plan(t.ctx, prompt.Turn{Begun: t.begun, UserText: t.text, Policy: t.policy}); e.err != nil {
		return e
	}
	// Nothing reads the begun's artifacts (the plan keeps its phase's block) or its user
	// message (the plan left it out of the history) again.
	t.begun.Artifacts, t.begun.User = nil, nil
	sink := &firstDelta{Emitter: t.em, started: t.started, took: &e.firstDelta}
	e.out, e.err = o.streams.Attempts(t.ctx, requests(e.plan), sink, rules(e.plan))
	return e
}

// firstDelta is the turn's emitter as the stream step sees it, timing the first delta.
type firstDelta struct {
	*events.Emitter
	started time.Time
	took    *time.Duration // 0 until the first delta
}

// Delta implements [stream.Sink].
func (s *firstDelta) Delta(ctx context.Context, text string) error {
	if *s.took == 0 {
		*s.took = time.Since(s.started)
	}
	return s.Emitter.Delta(ctx, text)
}

// requests builds each attempt's request from the plan ([stream.Requests]).
func requests(plan *prompt.Plan) stream.Requests {
	return func(correction []thinkingml.Issue) (*upstream.Request, error) {
		req, err := plan.Request(correction)
		return &req, err
	}
}

// rules are how the stream step judges this turn's attempts, by its runtime policy.
func rules(plan *prompt.Plan) stream.Rules {
	opts := postprocess.Options{Locale: plan.Locale, SerpQueriesOptional: plan.Policy.SerpOptional}
	return stream.Rules{
		Policy:   stream.Policy(plan.Policy.ReplyPolicy),
		Judge:    func(text string) stream.Check { return postprocess.Check(text, opts) },
		Fallback: func() (string, error) { return postprocess.EmptyFallback(plan.Skills, plan.Locale) },
	}
}
