package orchestration

import (
	"context"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/upstream"
)

// eventWriter is the event log as a turn uses it.
type eventWriter interface {
	Append(ctx context.Context, name string, data any) (int64, error)
	NextSeq() int64
	Close(ctx context.Context) error
}

// emitter writes a turn's events: it stamps every payload with the message and request ids
// and numbers content deltas per attempt. It implements [stream.Sink].
type emitter struct {
	w       eventWriter
	base    events.Base
	route   events.Route
	seq     int // content deltas of this attempt
	attempt int // 1 for the first attempt; deltas carry it from the second on
}

func newEmitter(w eventWriter, base events.Base, route events.Route) *emitter {
	return &emitter{w: w, base: base, route: route, attempt: 1}
}

// restart begins a new attempt: the client drops its text and seq starts again at 1.
func (e *emitter) restart(attempt int) { e.seq, e.attempt = 0, attempt }

// emit stamps base into the payload and appends it.
func (e *emitter) emit(ctx context.Context, name string, data any, base *events.Base) error {
	*base = e.base
	_, err := e.w.Append(ctx, name, data)
	return err
}

func (e *emitter) status(ctx context.Context, d events.StatusData) error {
	return e.emit(ctx, events.Status, &d, &d.Base)
}

// Routed announces which upstream took the request.
func (e *emitter) Routed(ctx context.Context, ev upstream.Event) error {
	model := e.route.ResolvedModel
	if ev.Model != "" {
		model = &ev.Model
	}
	d := events.StatusData{State: events.StateRouted, Provider: e.route.Provider, EndpointID: e.route.EndpointID, UpstreamRequestID: ev.UpstreamRequestID}
	if model != nil {
		d.ResolvedModel = *model
	}
	return e.status(context.WithoutCancel(ctx), d)
}

// Delta forwards one piece of filtered reply text.
func (e *emitter) Delta(ctx context.Context, text string) error {
	e.seq++
	d := events.DeltaData{Seq: e.seq, Delta: text}
	if e.attempt > 1 {
		d.Attempt = e.attempt
	}
	return e.emit(context.WithoutCancel(ctx), events.ContentDelta, &d, &d.Base)
}

// ToolCall announces an MCP call starting or ending.
func (e *emitter) ToolCall(ctx context.Context, call upstream.ToolCall, state string) error {
	return e.status(context.WithoutCancel(ctx), events.StatusData{
		State: events.StateToolCall,
		Tool:  &events.ToolState{ServerLabel: call.ServerLabel, Name: call.Name, State: state},
	})
}
