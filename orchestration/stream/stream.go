// Package stream is step 3 of a turn: it calls the upstream, passes text deltas through the
// ThinkingML stream filter to the client, turns MCP events into tool-call states, and keeps
// what the postprocessor needs (the forwarded text, withheld blocks, tool calls, usage, the
// response id). It enforces the idle limit; the caller's context carries the hard limit.
package stream

import (
	"context"
	"errors"
	"iter"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/orchestration/upstream"
)

// Streamer is the upstream as the stream handler uses it.
type Streamer interface {
	Stream(ctx context.Context, req upstream.Request) iter.Seq2[upstream.Event, error]
}

// Sink receives what the client must see while the reply streams. An error from it stops the
// turn (it means the event log itself failed).
type Sink interface {
	Routed(ctx context.Context, ev upstream.Event) error
	Delta(ctx context.Context, text string) error
	ToolCall(ctx context.Context, call upstream.ToolCall, state string) error
}

// ErrNoTerminal means the upstream stream ended without its terminal event: a failure, never
// a short reply.
var ErrNoTerminal = errors.New("stream: upstream ended without a terminal event")

// ErrIdle is the cause of a stream cut because the upstream sent nothing for the idle limit.
var ErrIdle = errors.New("stream: upstream idle for too long")

// Result is what one attempt produced, complete or not.
type Result struct {
	Text              string // the forwarded (filtered) text, what the client assembled
	Blocks            []thinkingml.Block
	ToolCalls         []ToolCall
	ResponseID        string
	Model             string
	UpstreamRequestID string
	Usage             *upstream.Usage
	Routed            bool
}

// ToolCall is one finished MCP call with how long it took, timed from its start event.
type ToolCall struct {
	upstream.ToolCall
	Duration time.Duration
}

// Handler runs attempts against one upstream.
type Handler struct {
	up   Streamer
	idle time.Duration
}

// New returns a handler that cuts a stream after idle without upstream events (0: no limit).
func New(up Streamer, idle time.Duration) *Handler { return &Handler{up: up, idle: idle} }

// Run streams one attempt. On error it still returns what arrived, so the partial text can be
// kept; a stream that ends without its terminal event is an error, never a short reply.
func (h *Handler) Run(ctx context.Context, req upstream.Request, sink Sink) (Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := h.idleTimer(cancel)
	defer idle.Stop()

	a := attempt{sink: sink, filter: thinkingml.NewFilter(), started: map[string]time.Time{}}
	var err error
	for ev, serr := range h.up.Stream(ctx, req) {
		idle.Reset(h.idleLimit())
		if serr != nil {
			err = serr
			break
		}
		if err = a.handle(ctx, ev); err != nil {
			break
		}
	}
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if err == nil && !a.completed {
		err = ErrNoTerminal
	}
	if ferr := a.flush(ctx); err == nil {
		err = ferr
	}
	return a.result(), err
}

func (h *Handler) idleLimit() time.Duration {
	if h.idle <= 0 {
		return 24 * time.Hour
	}
	return h.idle
}

func (h *Handler) idleTimer(cancel context.CancelCauseFunc) *time.Timer {
	return time.AfterFunc(h.idleLimit(), func() { cancel(ErrIdle) })
}

// attempt is the state of one streamed attempt.
type attempt struct {
	sink      Sink
	filter    *thinkingml.Filter
	text      strings.Builder
	res       Result
	completed bool
	started   map[string]time.Time // tool call id → start
}

func (a *attempt) handle(ctx context.Context, ev upstream.Event) error {
	switch ev.Kind {
	case upstream.EventCreated:
		a.res.ResponseID, a.res.Model, a.res.UpstreamRequestID = ev.ResponseID, ev.Model, ev.UpstreamRequestID
		a.res.Routed = true
		return a.sink.Routed(ctx, ev)
	case upstream.EventTextDelta:
		out, blocks := a.filter.Write(ev.Delta)
		a.res.Blocks = append(a.res.Blocks, blocks...)
		return a.forward(ctx, out)
	case upstream.EventToolCallStarted:
		a.started[ev.Tool.ID] = time.Now()
		return a.sink.ToolCall(ctx, *ev.Tool, "started")
	case upstream.EventToolCallDone:
		var took time.Duration
		if t, ok := a.started[ev.Tool.ID]; ok {
			took = time.Since(t)
		}
		a.res.ToolCalls = append(a.res.ToolCalls, ToolCall{ToolCall: *ev.Tool, Duration: took})
		state := "completed"
		if ev.Tool.Failed {
			state = "failed"
		}
		return a.sink.ToolCall(ctx, *ev.Tool, state)
	case upstream.EventCompleted:
		a.completed = true
		if ev.ResponseID != "" {
			a.res.ResponseID = ev.ResponseID
		}
		if ev.Model != "" {
			a.res.Model = ev.Model
		}
		a.res.Usage = ev.Usage
	}
	return nil
}

func (a *attempt) forward(ctx context.Context, out string) error {
	if out == "" {
		return nil
	}
	a.text.WriteString(out)
	return a.sink.Delta(ctx, out)
}

// flush forwards what the filter still held back when the stream ended.
func (a *attempt) flush(ctx context.Context) error {
	out, blocks := a.filter.Close()
	a.res.Blocks = append(a.res.Blocks, blocks...)
	// A cancelled turn still forwards its tail: the partial text is kept, in the log too.
	return a.forward(context.WithoutCancel(ctx), out)
}

func (a *attempt) result() Result {
	a.res.Text = a.text.String()
	return a.res
}
