package orchestration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/lease"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/store"
)

// errTurnTimeout is the cause of a turn cut by the hard turn limit.
var errTurnTimeout = errors.New("the turn took longer than its time limit")

// complete emits phase_changed (when the turn moved the phase) and completed, which commits
// together with the message's outcome and the turn's pending settlement (the session and
// strategy of a turn that moved no phase); a move's settlement is already in. So a client
// that sees completed and reads the message, the session or its transitions gets their
// final state. A settlement the store refuses (another user's strategy) fails the turn
// instead, as it failed when the settlement was a write of its own.
func (o *Orchestrator) complete(t *turn, plan *prompt.Plan, out stream.Outcome, s postprocess.Settlement, change *events.PhaseChange, pending *store.Settlement) {
	ctx := t.ctx // phase_changed waits for room only while the turn lives; completed never waits
	meta := s.Metadata
	meta.PhaseChange = change
	if change != nil {
		if err := t.em.PhaseChanged(ctx, *change); err != nil {
			o.fail(t, nil, out, err)
			return
		}
	}
	res := out.Result
	msg := o.result(t, store.StatusCompleted, res.Text)
	msg.Records = records(meta.ToolCalls, t.traces.unrecorded())
	msg.ResponseID = res.ResponseID
	msg.ToolCalls, msg.GenUI, msg.StatePatch = jsonOrNull(meta.ToolCalls), jsonOrNull(meta.GenUI), store.JSON(meta.StatePatch)
	msg.Validation, msg.Usage = jsonOrNull(meta.Validation), jsonOrNull(meta.Usage)
	metaJSON, err := events.Encode(meta)
	if err != nil { // plain values the turn built: cannot fail
		o.fail(t, nil, out, err)
		return
	}
	msg.Metadata = metaJSON
	msg.Settlement = pending
	data := events.CompletedData{Route: finalRoute(t.em.Route(), res), ReplyLen: utf8.RuneCountInString(res.Text), Metadata: metaJSON}
	o.handOver(t)
	if err := t.em.Completed(ctx, data, msg); err != nil {
		o.logger.Error("emit completed", "message_id", msg.ID, "err", err)
	}
	if refused := o.settlementRefused(t, pending); refused != nil {
		o.fail(t, plan, out, refused)
		return
	}
	o.metrics.TurnEnded(store.StatusCompleted, "", time.Since(t.started))
}

// settlementRefused waits for the completed event's commit when its settlement records a
// strategy, the one part the store may refuse, and returns why it was refused (nil when it
// was not, or when the turn stops waiting: its context ended). A turn without one never
// waits: nothing in it can be refused.
func (o *Orchestrator) settlementRefused(t *turn, pending *store.Settlement) error {
	if pending == nil || pending.Strategy == nil {
		return nil
	}
	if err := t.em.Wait(t.ctx); !errors.Is(err, eventlog.ErrRefused) {
		return nil
	}
	o.logger.Warn("the turn's strategy is another user's; the turn fails", "message_id", t.begun.Assistant.ID, "strategy_id", pending.Strategy.ID)
	return fmt.Errorf("orchestration: settle strategy %s: %w", pending.Strategy.ID, store.ErrNotFound)
}

// fail ends a turn with an error event, which commits together with the message's outcome
// (keeping the partial text it produced). A stream broken after partial text also gets
// its fallback reply. A turn another replica took over writes nothing: that replica ends
// it.
func (o *Orchestrator) fail(t *turn, plan *prompt.Plan, out stream.Outcome, err error) {
	if lost(t.ctx, err) {
		o.logger.Warn("turn stopped: another replica owns it now", "message_id", t.begun.Assistant.ID, "err", err)
		return
	}
	code, status, text := classify(t.ctx, err)
	o.logger.Warn("turn failed", "message_id", t.begun.Assistant.ID, "code", code, "err", err)
	msg := o.result(t, status, out.Result.Text)
	msg.Error = jsonOrNull(map[string]any{"code": code, "message": text})
	calls := postprocess.ToolCalls(out.Calls) // tools that ran are recorded whatever the outcome
	msg.ToolCalls, msg.Records = jsonOrNull(calls), records(calls, t.traces.unrecorded())
	meta := events.FailureMetadata{Attempts: out.Attempts, RefusedAttempts: events.RefusedAttempts(out.Refused)}
	if plan != nil {
		policy := o.merged(t.policy, plan)
		meta.Phase, meta.RuntimePolicy = string(plan.Phase), &policy
	}
	var refused *stream.RefusedError
	if errors.As(err, &refused) {
		meta.Problems = problemTexts(refused.Refused)
	}
	if brokenOff(code, out.Result.Text) {
		meta.FallbackReply = o.fallback(t.writeCtx(), plan, t.begun.Session.Locale)
	}
	msg.Metadata = jsonOrNull(meta)
	route := finalRoute(t.em.Route(), out.Result)
	data := events.ErrorData{Code: code, Message: text, Error: text, Provider: route.Provider, ResolvedModel: route.ResolvedModel,
		EndpointID: route.EndpointID, ToolCalls: calls, Fallback: meta.FallbackReply}
	o.handOver(t)
	if eerr := t.em.Failed(t.writeCtx(), data, msg); eerr != nil {
		o.logger.Error("emit error event", "message_id", msg.ID, "err", eerr)
	}
	if _, _, upstreamFailure := stream.Failure(err); upstreamFailure {
		o.metrics.UpstreamError(code, route.EndpointID)
	}
	o.metrics.TurnEnded(status, code, time.Since(t.started))
}

// brokenOff reports a stream that broke after partial text: a failure other than the
// user's cancel or a refused reply, with text already out. Its client gets a fallback.
func brokenOff(code, partial string) bool {
	return partial != "" && code != events.CodeCancelled && code != events.CodeReplyInvalid
}

// fallback is the reply that stands in for one cut off (skills fallback/interrupted), in
// the session's locale; "" when it cannot be read (the turn still ends).
func (o *Orchestrator) fallback(ctx context.Context, plan *prompt.Plan, locale string) string {
	texts := o.texts.For(ctx)
	if plan != nil {
		texts = plan.Skills
	}
	text, err := postprocess.InterruptedFallback(texts, locale)
	if err != nil {
		o.logger.Error("fallback reply", "err", err)
		return ""
	}
	return text
}

// records are what the terminal event writes besides the message's columns: one row per
// MCP call (the store adds the message, session and outcome) and the traces of the
// requests not recorded while the reply streamed.
func records(calls []store.ToolCall, traces []store.Trace) *store.TurnRecords {
	r := &store.TurnRecords{Traces: traces}
	for _, c := range calls {
		r.Calls = append(r.Calls, store.MCPCall{ToolCall: c})
	}
	return r
}

// result is the message's outcome as the terminal event writes it.
func (o *Orchestrator) result(t *turn, status, text string) *store.Message {
	m := *t.begun.Assistant
	m.Status, m.Content = status, text
	return &m
}

// lost reports a turn that another replica took over: it writes nothing more.
func lost(ctx context.Context, err error) bool {
	return errors.Is(context.Cause(ctx), lease.ErrLost) || errors.Is(err, eventlog.ErrLost) || errors.Is(err, store.ErrNotOwner)
}

// classify maps a turn's error to the client error code, the message status and the text
// clients see (internal errors are not spelled out to them, nor a provider's own words).
func classify(ctx context.Context, err error) (code, status, text string) {
	cause := context.Cause(ctx)
	var refused *stream.RefusedError
	switch {
	case errors.Is(err, ErrCancelled) || errors.Is(cause, ErrCancelled):
		return events.CodeCancelled, store.StatusCancelled, ErrCancelled.Error()
	case errors.Is(cause, lease.ErrOutage):
		return events.CodeInterrupted, store.StatusInterrupted, lease.ErrOutage.Error()
	case errors.Is(err, ErrInterrupted) || errors.Is(cause, ErrInterrupted):
		return events.CodeInterrupted, store.StatusInterrupted, ErrInterrupted.Error()
	case errors.Is(err, errTurnTimeout), errors.Is(cause, errTurnTimeout):
		return events.CodeUpstreamTimeout, store.StatusFailed, errTurnTimeout.Error()
	case errors.As(err, &refused):
		return events.CodeReplyInvalid, store.StatusFailed, refused.Error()
	}
	if code, text, ok := stream.Failure(err); ok {
		return code, store.StatusFailed, text
	}
	return events.CodeInternalError, store.StatusFailed, "internal error"
}

// finalRoute is what completed and error report: the routed endpoint, with the model and
// request id the upstream named.
func finalRoute(r events.Route, res stream.Result) events.Route {
	if res.Model != "" {
		m := res.Model
		r.ResolvedModel = &m
	}
	if res.UpstreamRequestID != "" {
		id := res.UpstreamRequestID
		r.UpstreamRequestID = &id
	}
	return r
}

// problemTexts lists each refused attempt's problems, in order.
func problemTexts(refused [][]thinkingml.Issue) []string {
	var out []string
	for _, issues := range refused {
		for _, is := range issues {
			out = append(out, string(is.Code)+": "+is.Message)
		}
	}
	return out
}

// jsonOrNull encodes v for a JSON column; a nil value stays SQL NULL.
func jsonOrNull(v any) store.JSON {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// jsonOf encodes v for a JSON column, failing loudly (evidence the code built itself).
func jsonOf(v any) (store.JSON, error) {
	b, err := json.Marshal(v)
	return b, err
}

// handOver is what a turn does just before it hands its terminal event to the log: it
// gives its slots back, so that a client that sees the end and posts again finds them
// free, and tells the keeper it is ending, so that a renewal that finds it ended by then
// does not take it for lost (lease.Keeper.Ending).
func (o *Orchestrator) handOver(t *turn) {
	t.freeSlot()
	o.keeper.Ending(t.begun.Assistant.ID)
}
