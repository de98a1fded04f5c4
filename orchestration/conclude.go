package orchestration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/finish"
	"github.com/phaseflow/phaseflow/orchestration/lease"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/report"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/store"
)

// ending is what a turn's attempts left: its plan (nil when planning failed), what they
// did (nil when none ran), the error they ended on and when the first delta went out.
type ending struct {
	plan       *prompt.Plan
	out        *stream.Outcome
	err        error
	firstDelta time.Duration
}

// conclude is steps 4 and 5 handed to the log: the reply settled (postprocess), the turn's
// end built (finish), then a move's settlement first, in a transaction of its own
// (phase_changed reports the move before the end), then phase_changed, then the terminal
// event, which commits with the message's outcome and any other settlement. A step of it
// that fails ends the turn with an error event instead. A turn another replica took over
// writes nothing: that replica ends it.
func (o *Orchestrator) conclude(t *turn, e ending) {
	if e.out == nil {
		e.out = &stream.Outcome{}
	}
	tail := o.tail(t, e)
	if tail.IgnoredMove != nil {
		o.logger.Warn("handler asked for a forbidden move; ignored", "session_id", t.begun.Session.ID, "err", tail.IgnoredMove)
	}
	if tail.Move != nil {
		if err := store.WhileUnavailable(t.ctx, func() error { return o.store.SettleTurn(t.writeCtx(), tail.Move) }); err != nil {
			e.err, tail = err, o.failed(t, e)
		}
	}
	if c := tail.PhaseChange; c != nil && e.err == nil {
		if err := t.em.PhaseChanged(t.ctx, *c); err != nil {
			e.err, tail = err, o.failed(t, e)
		}
	}
	if lost(t.ctx, e.err) {
		o.logger.Warn("turn stopped: another replica owns it now", "message_id", t.begun.Assistant.ID, "err", e.err)
		return
	}
	if err := o.end(t, tail, e); errors.Is(err, eventlog.ErrRefused) {
		o.logger.Warn("the turn's strategy is another user's; the turn fails", "message_id", t.begun.Assistant.ID)
		e.err = fmt.Errorf("orchestration: settle strategy %s: %w", tail.Message.Settlement.Strategy.ID, store.ErrNotFound)
		o.end(t, o.failed(t, e), e)
	}
}

// tail builds the turn's end: the reply settled and the completed tail, or the error's
// when the attempts failed, or the settling did.
func (o *Orchestrator) tail(t *turn, e ending) finish.Tail {
	if e.err != nil {
		return o.failed(t, e)
	}
	settled := postprocess.Settle(postprocess.Input{
		Handler: e.plan.Handler, Phase: e.plan.Phase, Stage: e.plan.Stage, Block: e.plan.Block,
		Outcome: *e.out, Policy: stream.Policy(e.plan.Policy.ReplyPolicy), GenUI: o.genui, Skills: e.plan.Skills, Locale: e.plan.Locale,
	})
	tail, err := finish.Completed(o.finishTurn(t), finish.Completion{Plan: e.plan, Outcome: *e.out, Settled: settled,
		Handlers: o.handlers, At: time.Now().UTC()})
	if err != nil {
		e.err = err
		return o.failed(t, e)
	}
	return tail
}

// failed is the tail of the turn failing with e.err.
func (o *Orchestrator) failed(t *turn, e ending) finish.Tail {
	f := finish.Failure{Plan: e.plan, Outcome: *e.out, Err: e.err, Cause: context.Cause(t.ctx), Locale: t.begun.Session.Locale}
	if e.plan == nil {
		f.Texts = o.texts.For(t.writeCtx())
	}
	return finish.Failed(o.finishTurn(t), f)
}

// finishTurn is the turn as the finish step sees it.
func (o *Orchestrator) finishTurn(t *turn) finish.Turn {
	return finish.Turn{Begun: t.begun, UserText: t.text, Owner: o.log.Owner(), Route: t.em.Route()}
}

// end hands the terminal event to the log, after giving the turn's slots back (so a client
// that sees the end and posts again finds them free) and telling the keeper the turn is
// ending (so a renewal that finds it ended does not take it for lost). Its error is
// eventlog.ErrRefused when the store refused the settlement (the turn is not reported:
// its failure follows).
func (o *Orchestrator) end(t *turn, tail finish.Tail, e ending) error {
	t.freeSlot()
	o.keeper.Ending(t.begun.Assistant.ID)
	eerr := t.em.End(t.ctx, tail.Name, tail.Data, tail.Message)
	if eerr != nil && !errors.Is(eerr, eventlog.ErrRefused) {
		o.logger.Error("emit the terminal event", "message_id", tail.Message.ID, "event", tail.Name, "err", eerr)
	}
	if errors.Is(eerr, eventlog.ErrRefused) {
		return eerr
	}
	_, _, upstreamFailure := stream.Failure(e.err)
	o.metrics.TurnEnded(tail.Message.Status, tail.Code, time.Since(t.started))
	o.report.Ended(report.Turn{MessageID: tail.Message.ID, SessionID: t.begun.Session.ID, RequestID: t.begun.Assistant.RequestID,
		Route: t.em.Route(), Outcome: e.out, Status: tail.Message.Status, Code: tail.Code, Err: e.err,
		FirstDelta: e.firstDelta, Duration: time.Since(t.started), Move: tail.PhaseChange, UpstreamFailure: tail.Code != "" && upstreamFailure})
	return eerr
}

// lost reports a turn that another replica took over: it writes nothing more.
func lost(ctx context.Context, err error) bool {
	return errors.Is(context.Cause(ctx), lease.ErrLost) || errors.Is(err, eventlog.ErrLost) || errors.Is(err, store.ErrNotOwner)
}
