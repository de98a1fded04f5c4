package orchestration

import (
	"context"
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
	"github.com/phaseflow/phaseflow/store"
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

// turn is what a running generation carries through its steps: fixed when it begins, never
// filled in by later steps (each step returns its own values).
type turn struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	begun   *session.Begun
	text    string
	em      *events.Emitter
	policy  *RuntimePolicy // the request's runtime_policy, nil for none
	started time.Time
	// freeSlot gives the turn's concurrency slots back (once), before the terminal event,
	// so a client that sees the end and posts again finds them free.
	freeSlot func()
}

// writeCtx is the context for writing the turn's own events and rows: it survives the
// turn's cancellation, because a cancelled turn must still write its tail.
func (t *turn) writeCtx() context.Context { return context.WithoutCancel(t.ctx) }

// HandleMessage runs step 1 (session: the user's message, the assistant message claimed by
// this replica's lease, its log started by status queued, in one transaction) and starts
// the rest of the turn in the background. It returns as soon as the turn is queued; the
// caller follows the message's events. The generation never depends on ctx.
func (o *Orchestrator) HandleMessage(ctx context.Context, req Request) (*Turn, error) {
	if err := o.acquire(req.UserID); err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			o.release(req.UserID)
		}
	}()
	b, err := o.core.Begin(ctx, req.Request, o.keeper.Lease())
	if err != nil {
		return nil, err
	}
	if b.Duplicate {
		return &Turn{SessionID: b.Session.ID, MessageID: b.Assistant.ID, RequestID: b.Assistant.RequestID, Duplicate: true, Message: *b.Assistant}, nil
	}
	t, err := o.newTurn(b, req)
	if err != nil {
		// The message stays pending under a lease nobody renews: the next sweep ends it.
		o.logger.Error("a begun turn could not start; the sweep will end it", "message_id", b.Assistant.ID, "err", err)
		return nil, err
	}
	started = true
	o.metrics.TurnStarted()
	answer := &Turn{SessionID: b.Session.ID, MessageID: b.Assistant.ID, RequestID: req.RequestID, Message: *b.Assistant}
	go o.run(t)
	return answer, nil
}

// newTurn sets up the turn's context (derived from the orchestrator's base, not from any
// request, limited by the hard turn timeout, and stopped by a cancel, a lost lease or an
// outage through the keeper) and opens its event log after the committed queued event.
func (o *Orchestrator) newTurn(b *session.Begun, req Request) (*turn, error) {
	ctx, cancel := context.WithCancelCause(o.base)
	if o.cfg.TurnTimeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, o.cfg.TurnTimeout, errTurnTimeout)
		inner := cancel
		cancel = func(cause error) { inner(cause); stop() }
	}
	id := b.Assistant.ID
	w, err := o.log.Open(id, eventlog.Opening{
		LastSeq: b.Events[len(b.Events)-1].Seq, Committed: b.Events,
		OnLost: func() { cancel(lease.ErrLost) },
	})
	if err != nil {
		cancel(err)
		return nil, fmt.Errorf("orchestration: open event log: %w", err)
	}
	o.keeper.Track(id, cancel)
	return &turn{
		ctx: ctx, cancel: cancel, begun: b, text: req.Text, policy: req.Policy, started: time.Now(),
		freeSlot: sync.OnceFunc(func() { o.freeSlot(req.UserID) }),
		em:       events.NewEmitter(w, events.Base{MessageID: id, RequestID: req.RequestID}, o.route()),
	}, nil
}

// route is what a turn reports before an endpoint answers: the configured primary.
func (o *Orchestrator) route() events.Route {
	model := o.cfg.Model
	return events.Route{Provider: o.cfg.Provider, ResolvedModel: &model, EndpointID: o.cfg.EndpointID}
}

// run is the turn's outline (orchestrator.md §2), after step 1 in HandleMessage: plan
// (prompt), attempts (stream, with the correction retry), settle (postprocess), carry over
// (carryover, when the phase moves), then complete or fail.
func (o *Orchestrator) run(t *turn) {
	defer o.wg.Done()
	defer t.freeSlot() // normally already freed before the terminal event
	defer o.keeper.Untrack(t.begun.Assistant.ID)
	defer t.cancel(nil)
	if err := t.em.Working(t.ctx, t.begun.Session.Phase); err != nil {
		o.fail(t, nil, stream.Outcome{}, err)
		return
	}
	plan, err := o.planner.Plan(t.ctx, prompt.Turn{Begun: t.begun, UserText: t.text, MaxOutputTokens: t.policy.requestedCap()})
	if err != nil {
		o.fail(t, nil, stream.Outcome{}, err)
		return
	}
	policy := o.merged(t.policy, plan)
	out, err := o.streams.Attempts(t.ctx, plan.Request, o.sink(t), o.rules(plan, policy))
	if err != nil {
		o.fail(t, plan, out, err)
		return
	}
	settled := postprocess.Settle(postprocess.Input{
		Handler: plan.Handler, Phase: plan.Phase, Stage: plan.Stage, Block: plan.Block,
		Outcome: out, Policy: stream.Policy(policy.ReplyPolicy), GenUI: o.genui, Skills: plan.Skills, Locale: plan.Locale,
	})
	settled.Metadata.RuntimePolicy = &policy
	change, err := o.persist(t, plan, out.Result, &settled)
	if err != nil {
		o.fail(t, plan, out, err)
		return
	}
	o.complete(t, out, settled, change)
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

// sink is the turn's emitter as the stream step sees it, reporting the time to the first
// delta to the metrics.
func (o *Orchestrator) sink(t *turn) stream.Sink {
	return &timedSink{Emitter: t.em, started: t.started, first: o.metrics.FirstDelta}
}

// timedSink reports the first delta's delay once.
type timedSink struct {
	*events.Emitter
	started time.Time
	first   func(time.Duration)
	seen    bool
}

// Delta implements [stream.Sink].
func (s *timedSink) Delta(ctx context.Context, text string) error {
	if !s.seen {
		s.seen = true
		s.first(time.Since(s.started))
	}
	return s.Emitter.Delta(ctx, text)
}

// keep makes a store error of the turn's own writes wait out an unreachable database,
// within the turn's life.
func (t *turn) keep(fn func(ctx context.Context) error) error {
	return store.WhileUnavailable(t.ctx, func() error { return fn(t.writeCtx()) })
}
