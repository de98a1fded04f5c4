package orchestration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/upstream"
	"github.com/phaseflow/phaseflow/store"
)

// replyInvalidError ends a turn whose reply failed the checks on every attempt.
type replyInvalidError struct{ problems []string }

func (e *replyInvalidError) Error() string {
	return "the reply failed its checks twice: " + strings.Join(e.problems, "; ")
}

// Metadata is completed.metadata (sse-contract.md §3): what the front end renders besides
// the text. It is also persisted with the message.
type Metadata struct {
	Phase             string                   `json:"phase"`
	PhaseChange       *PhaseChange             `json:"phase_change"`
	GenUI             []json.RawMessage        `json:"genui"`
	StatePatch        json.RawMessage          `json:"state_patch"`
	ToolCalls         []postprocess.ToolRecord `json:"tool_calls"`
	Validation        any                      `json:"validation"`
	Usage             *upstream.Usage          `json:"usage"`
	MissingFields     []string                 `json:"missing_fields"`
	Attempts          int                      `json:"attempts"`
	Stage             string                   `json:"stage,omitempty"`
	RejectedPatch     *rejectedPatch           `json:"rejected_patch,omitempty"`
	DroppedGenUI      []string                 `json:"dropped_genui,omitempty"`
	DeploymentSummary map[string]any           `json:"deployment_summary,omitempty"`
	Fallback          bool                     `json:"fallback,omitempty"`
	Problems          []string                 `json:"problems,omitempty"`
}

func (o *Orchestrator) metadata(t *turn) Metadata {
	s := t.settled
	m := Metadata{
		Phase: string(t.plan.phase), Stage: t.plan.stage, PhaseChange: s.change, GenUI: s.genui.Items,
		StatePatch: s.applied, ToolCalls: s.toolCalls, Usage: t.result.Usage,
		MissingFields: s.report.MissingFields, Attempts: t.attempts, Problems: t.problems,
		RejectedPatch: s.rejected, DroppedGenUI: append(t.outcome.Dropped, s.genui.Dropped...),
		DeploymentSummary: s.deployment, Fallback: t.fallback,
	}
	if m.MissingFields == nil {
		m.MissingFields = []string{}
	}
	if m.ToolCalls == nil {
		m.ToolCalls = []postprocess.ToolRecord{}
	}
	if o.cfg.ReplyPolicy != PolicyOff {
		m.Validation = t.outcome.Validation
	}
	return m
}

// complete persists the accepted reply, then emits phase_changed (when the turn moved the
// phase) and completed. Persisting first means a client that sees completed and reads the
// message, the session or its transitions gets their final state.
func (o *Orchestrator) complete(t *turn) error {
	ctx := t.logCtx()
	meta := o.metadata(t)
	t.msg.Status = store.StatusCompleted
	o.fillMessage(t, meta)
	t.msg.LastEventID = t.em.w.NextSeq()
	if meta.PhaseChange != nil {
		t.msg.LastEventID++ // the phase_changed status comes first
	}
	if err := o.store.FinishMessage(ctx, t.msg); err != nil {
		return fmt.Errorf("orchestration: persist reply: %w", err)
	}
	o.recordToolCalls(ctx, t, meta.ToolCalls)
	o.touchSession(ctx, t)
	if c := meta.PhaseChange; c != nil {
		if err := t.em.status(ctx, events.StatusData{State: events.StatePhaseChanged, From: c.From, To: c.To, Reason: c.Reason}); err != nil {
			return err
		}
	}
	data := events.CompletedData{Route: o.finalRoute(t), ReplyLen: utf8.RuneCountInString(t.result.Text), Metadata: meta}
	t.freeSlot()
	if err := t.em.emit(ctx, events.Completed, &data, &data.Base); err != nil {
		return err
	}
	o.closeLog(t)
	return nil
}

func (o *Orchestrator) fillMessage(t *turn, meta Metadata) {
	now := time.Now().UTC()
	t.msg.Content, t.msg.ResponseID, t.msg.CompletedAt = t.result.Text, t.result.ResponseID, &now
	t.msg.ToolCalls = mustJSON(meta.ToolCalls)
	t.msg.GenUI = mustJSON(meta.GenUI)
	if len(meta.StatePatch) > 0 {
		t.msg.StatePatch = store.JSON(meta.StatePatch)
	}
	if meta.Validation != nil {
		t.msg.Validation = mustJSON(meta.Validation)
	}
	if meta.Usage != nil {
		t.msg.Usage = mustJSON(meta.Usage)
	}
	t.msg.Metadata = mustJSON(meta)
}

// recordToolCalls writes the turn's MCP calls to their table. The message already holds
// them, so a failure here is logged rather than failing the turn.
func (o *Orchestrator) recordToolCalls(ctx context.Context, t *turn, calls []postprocess.ToolRecord) {
	if len(calls) == 0 {
		return
	}
	rows := make([]store.MCPCall, len(calls))
	for i, c := range calls {
		rows[i] = store.MCPCall{
			MessageID: t.msg.ID, SessionID: t.begun.Session.ID, ServerLabel: c.ServerLabel, Name: c.Name,
			Arguments: store.JSON(c.Arguments), Output: c.Output, Error: c.Error, Status: c.Status, DurationMS: c.DurationMS,
		}
	}
	if err := o.store.InsertMCPCalls(ctx, rows); err != nil {
		o.logger.Error("record MCP calls", "message_id", t.msg.ID, "err", err)
	}
}

// touchSession writes the session's artifacts, metadata and upstream chaining state after a
// turn that did not move the phase (a move already wrote the session, with a fresh chain).
// A failure loses nothing of the reply, so it is logged rather than failing the turn.
func (o *Orchestrator) touchSession(ctx context.Context, t *turn) {
	if t.settled != nil && t.settled.change != nil {
		return
	}
	s := t.begun.Session
	s.PreviousResponseID, s.UpdatedAt = t.result.ResponseID, time.Now().UTC()
	if err := o.store.UpdateSession(ctx, s); err != nil {
		o.logger.Error("update session after turn", "session_id", s.ID, "err", err)
	}
}

func (o *Orchestrator) finalRoute(t *turn) events.Route {
	r := o.route()
	if t.result.Model != "" {
		m := t.result.Model
		r.ResolvedModel = &m
	}
	if t.result.UpstreamRequestID != "" {
		id := t.result.UpstreamRequestID
		r.UpstreamRequestID = &id
	}
	return r
}

// fail ends a turn with an error event, keeping the partial text it produced.
func (o *Orchestrator) fail(t *turn, err error) {
	ctx := t.logCtx()
	code, status := classify(t.ctx, err)
	msg := errorMessage(t.ctx, err)
	o.logger.Warn("turn failed", "message_id", t.msg.ID, "code", code, "err", err)
	now := time.Now().UTC()
	t.msg.Status, t.msg.Content, t.msg.CompletedAt = status, t.result.Text, &now
	t.msg.Error = mustJSON(map[string]any{"code": code, "message": msg})
	if ri := (*replyInvalidError)(nil); errors.As(err, &ri) {
		t.msg.Metadata = mustJSON(map[string]any{"attempts": t.attempts - 1, "problems": ri.problems})
	}
	t.msg.LastEventID = t.em.w.NextSeq()
	if perr := o.store.FinishMessage(ctx, t.msg); perr != nil {
		o.logger.Error("persist failed turn", "message_id", t.msg.ID, "err", perr)
	}
	route := o.finalRoute(t)
	data := events.ErrorData{Code: code, Message: msg, Error: msg, Provider: route.Provider, ResolvedModel: route.ResolvedModel, EndpointID: route.EndpointID}
	t.freeSlot()
	if eerr := t.em.emit(ctx, events.Error, &data, &data.Base); eerr != nil {
		o.logger.Error("emit error event", "message_id", t.msg.ID, "err", eerr)
	}
	o.closeLog(t)
}

func (o *Orchestrator) closeLog(t *turn) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := t.em.w.Close(ctx); err != nil {
		o.logger.Error("event log not fully persisted", "message_id", t.msg.ID, "err", err)
	}
}

// classify maps a turn's error to the client error code and the message status.
func classify(ctx context.Context, err error) (code, status string) {
	cause := context.Cause(ctx)
	var ue *upstream.Error
	var ri *replyInvalidError
	switch {
	case errors.Is(err, ErrCancelled) || errors.Is(cause, ErrCancelled):
		return events.CodeCancelled, store.StatusCancelled
	case errors.Is(err, ErrInterrupted) || errors.Is(cause, ErrInterrupted):
		return events.CodeInterrupted, store.StatusInterrupted
	case errors.Is(err, errTurnTimeout), errors.Is(err, stream.ErrIdle), errors.Is(err, context.DeadlineExceeded):
		return events.CodeUpstreamTimeout, store.StatusFailed
	case errors.As(err, &ri):
		return events.CodeReplyInvalid, store.StatusFailed
	case errors.As(err, &ue):
		return ue.Code, store.StatusFailed
	case errors.Is(err, stream.ErrNoTerminal):
		return events.CodeProviderError, store.StatusFailed
	}
	return events.CodeInternalError, store.StatusFailed
}

// errorMessage is the text clients see; internal errors are not spelled out to them.
func errorMessage(ctx context.Context, err error) string {
	code, _ := classify(ctx, err)
	if code == events.CodeInternalError {
		return "internal error"
	}
	if cause := context.Cause(ctx); cause != nil && (errors.Is(cause, ErrCancelled) || errors.Is(cause, ErrInterrupted)) {
		return cause.Error()
	}
	return err.Error()
}

func mustJSON(v any) store.JSON {
	b, err := json.Marshal(v)
	if err != nil {
		return store.JSON(`null`)
	}
	return store.JSON(b)
}
