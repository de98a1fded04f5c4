package events

import (
	"context"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// Appender is a message's event log as a turn writes it (eventlog.Writer): events, one
// of which moves the message row's status, and the terminal event with the message's
// outcome (an error when the store refused it: eventlog.ErrRefused); Trace reports a
// request sent upstream, for the message's records.
type Appender interface {
	Append(ctx context.Context, name string, data any) (int64, error)
	AppendWithStatus(ctx context.Context, name string, data any, status string) (int64, error)
	Finish(ctx context.Context, name string, data any, result *store.Message) (int64, error)
	Trace(attempt, seq int, s upstream.Sent)
}

// Emitter writes one turn's events: it stamps every payload with the message and request
// ids, numbers content deltas, and remembers the route the upstream answered on, which
// completed and error repeat. A turn has one emitter, used by one goroutine at a time.
// A write waits for room in the log (the database down or far behind) only while ctx lives,
// so a cancelled or shut-down turn is never stuck behind an unreachable database; with room
// it is written whatever ctx says, so a cancelled turn still writes its tail, and the
// terminal event never waits.
//
// Deltas are numbered 1, 2, 3 … across the whole message, retries included
// (docs/api.md): a retry never reuses a seq, so a client that knows nothing of
// retries and joins the deltas by seq still gets both attempts in order, never interleaved,
// and one that honours discard_through_seq drops exactly the refused attempt.
type Emitter struct {
	w       Appender
	base    Base
	route   Route
	seq     int // content deltas of the message so far, every attempt included
	attempt int // 1 for the first attempt; deltas carry it from the second on
}

// NewEmitter returns the emitter of the message base names, starting on route (the
// configured primary endpoint, until one answers).
func NewEmitter(w Appender, base Base, route Route) *Emitter {
	return &Emitter{w: w, base: base, route: route, attempt: 1}
}

// Route is where the turn was answered: the routed endpoint, or the primary.
func (e *Emitter) Route() Route { return e.route }

// Status emits a status event.
func (e *Emitter) Status(ctx context.Context, d StatusData) error {
	d.Base = e.base
	_, err := e.w.Append(ctx, Status, &d)
	return err
}

// Working emits status working, which moves the message to streaming in the same commit.
func (e *Emitter) Working(ctx context.Context, phase string) error {
	d := StatusData{Base: e.base, State: StateWorking, Phase: phase}
	_, err := e.w.AppendWithStatus(ctx, Status, &d, store.StatusStreaming)
	return err
}

// Routed announces which upstream took the request (provider, endpoint, model); completed
// and error repeat them.
func (e *Emitter) Routed(ctx context.Context, provider string, endpointID int, model, upstreamRequestID string) error {
	if provider != "" {
		e.route.Provider = provider
	}
	if endpointID != 0 {
		e.route.EndpointID = endpointID
	}
	if model != "" {
		e.route.ResolvedModel = &model
	}
	d := StatusData{State: StateRouted, Provider: e.route.Provider, EndpointID: e.route.EndpointID, UpstreamRequestID: upstreamRequestID}
	if e.route.ResolvedModel != nil {
		d.ResolvedModel = *e.route.ResolvedModel
	}
	return e.Status(ctx, d)
}

// Delta forwards one piece of filtered reply text.
func (e *Emitter) Delta(ctx context.Context, text string) error {
	e.seq++
	d := DeltaData{Base: e.base, Seq: e.seq, Delta: text}
	if e.attempt > 1 {
		d.Attempt = e.attempt
	}
	_, err := e.w.Append(ctx, ContentDelta, &d)
	return err
}

// ToolCall announces an MCP call starting or ending.
func (e *Emitter) ToolCall(ctx context.Context, serverLabel, name, state string) error {
	return e.Status(ctx, StatusData{State: StateToolCall, Tool: &ToolState{ServerLabel: serverLabel, Name: name, State: state}})
}

// Retrying announces the correction retry. It carries discard_through_seq, the last seq
// of the refused attempt (0 when it sent none): a client drops the deltas up to it. The
// new attempt's deltas go on from the next seq and carry its number.
func (e *Emitter) Retrying(ctx context.Context, attempt int, reason string) error {
	through := e.seq
	e.attempt = attempt
	return e.Status(ctx, StatusData{State: StateRetrying, Attempt: attempt, Reason: reason, DiscardThroughSeq: &through})
}

// PhaseChanged announces the move the turn made, before completed.
func (e *Emitter) PhaseChanged(ctx context.Context, c PhaseChange) error {
	return e.Status(ctx, StatusData{State: StatePhaseChanged, From: c.From, To: c.To, Reason: c.Reason})
}

// End emits the terminal event, completed (data a *CompletedData) or error (an
// *ErrorData), stamped with the message's ids; it commits with the message's outcome. Its
// error is eventlog.ErrRefused when the store refused that outcome's settlement: the turn
// then ends with another.
func (e *Emitter) End(ctx context.Context, name string, data any, result *store.Message) error {
	switch d := data.(type) {
	case *CompletedData:
		d.Base = e.base
	case *ErrorData:
		d.Base = e.base
	}
	_, err := e.w.Finish(ctx, name, data, result)
	return err
}

// Trace reports a request the turn sent upstream, for the message's records (attempt is
// the turn's attempt, seq the request's number within it).
func (e *Emitter) Trace(attempt, seq int, s upstream.Sent) { e.w.Trace(attempt, seq, s) }
