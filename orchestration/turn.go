package orchestration

import (
	"context"
	"fmt"
	"sync"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
)

// Turn names a started (or, for a repeated client_request_id, an earlier) generation.
type Turn struct {
	SessionID string
	MessageID string
	RequestID string
	// Duplicate is true when the request repeated a client_request_id: no new generation
	// was started and MessageID is the earlier message.
	Duplicate bool
}

// HandleMessage persists the user's message, creates the assistant message with its event
// log, and starts the generation in the background. It returns as soon as the turn is
// queued; the caller follows the message's events. The generation never depends on ctx.
func (o *Orchestrator) HandleMessage(ctx context.Context, req session.Request) (*Turn, error) {
	if err := o.acquire(); err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			o.release()
		}
	}()
	b, err := o.core.Begin(ctx, req)
	if err != nil {
		return nil, err
	}
	if b.Duplicate {
		return &Turn{SessionID: b.Session.ID, MessageID: b.Assistant.ID, RequestID: b.Assistant.RequestID, Duplicate: true}, nil
	}
	w, err := o.log.Open(b.Assistant.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("orchestration: open event log: %w", err)
	}
	t := o.newTurn(b, req, w)
	if err := t.em.status(ctx, events.StatusData{State: events.StateQueued, Phase: b.Session.Phase}); err != nil {
		o.abandon(t, err)
		return nil, err
	}
	started = true
	go o.run(t)
	return &Turn{SessionID: b.Session.ID, MessageID: b.Assistant.ID, RequestID: req.RequestID}, nil
}

// abandon ends a turn that could not even be queued, so its message does not stay pending
// and block the session.
func (o *Orchestrator) abandon(t *turn, cause error) {
	ctx := context.WithoutCancel(t.ctx)
	t.cancel(cause)
	t.msg.Status = store.StatusFailed
	if err := o.store.FinishMessage(ctx, t.msg); err != nil {
		o.logger.Error("abandon turn", "message_id", t.msg.ID, "err", err)
	}
	_ = t.em.w.Close(ctx)
	o.unregister(t.msg.ID)
}

// newTurn sets up the turn's context: derived from the orchestrator's base (not from any
// request), limited by the hard turn timeout, and cancellable by the cancel route.
func (o *Orchestrator) newTurn(b *session.Begun, req session.Request, w eventWriter) *turn {
	ctx, cancel := context.WithCancelCause(o.base)
	if o.cfg.TurnTimeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, o.cfg.TurnTimeout, errTurnTimeout)
		inner := cancel
		cancel = func(cause error) { inner(cause); stop() }
	}
	o.register(b.Assistant.ID, cancel)
	return &turn{
		ctx: ctx, cancel: cancel, begun: b, msg: b.Assistant, userText: req.Text, freeSlot: sync.OnceFunc(o.freeSlot),
		em: newEmitter(w, events.Base{MessageID: b.Assistant.ID, RequestID: req.RequestID}, o.route()),
	}
}

func (o *Orchestrator) route() events.Route {
	model := o.cfg.Model
	return events.Route{Provider: o.cfg.Provider, ResolvedModel: &model, EndpointID: o.cfg.EndpointID}
}

// run is the body of a turn's goroutine.
func (o *Orchestrator) run(t *turn) {
	defer o.wg.Done()
	defer t.freeSlot() // normally already freed before the terminal event
	defer o.unregister(t.msg.ID)
	defer t.cancel(nil)
	if err := o.generate(t); err != nil {
		o.fail(t, err)
	}
}
