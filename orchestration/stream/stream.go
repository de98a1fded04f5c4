// Package stream is step 3 of a turn (docs/turn.md): it calls the upstream, passes
// text deltas through the ThinkingML stream filter to the client, turns MCP events into
// tool-call states and records (the one store.ToolCall type), keeps what post-processing
// needs (the forwarded text, withheld blocks, usage, the response id), enforces the idle
// limit, and decides whether a reply is asked for again: [Handler.Attempts] runs the first
// attempt and at most one correction retry, by the turn's reply policy, and keeps what
// every attempt did for the turn's records: its MCP calls, numbered by attempt, and the
// requests it sends upstream, reported to the sink as they go out. [Failure] maps an
// attempt's failure to the client's error code and message, in one place.
package stream

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// Streamer is the upstream as the stream handler uses it.
type Streamer interface {
	Stream(ctx context.Context, req upstream.Request) iter.Seq2[upstream.Event, error]
}

// Sink receives what the client must see while the reply streams (events.Emitter). An
// error from it stops the turn (it means the event log itself failed). Trace reports each
// request an attempt sends upstream, for the turn's records, before it goes out: attempt
// is the attempt's number and seq counts its requests from 1 (a failover to another
// endpoint, a chat tool round each add one); it may be called from another goroutine than
// the one streaming and must not block.
type Sink interface {
	Routed(ctx context.Context, provider string, endpointID int, model, upstreamRequestID string) error
	Delta(ctx context.Context, text string) error
	ToolCall(ctx context.Context, serverLabel, name, state string) error
	Retrying(ctx context.Context, attempt int, reason string) error
	Trace(attempt, seq int, s upstream.Sent)
}

// ErrIdle is the cause of a stream cut because the upstream sent nothing for the idle limit.
var ErrIdle = errors.New("stream: upstream idle for too long")

// ErrReplyTooLarge ends a turn whose reply passed [Limits]: what arrived until then is
// kept, and nothing more is read.
var ErrReplyTooLarge = errors.New("stream: the reply passed the server's size limit")

// Limits bound what one turn may make the server hold and write, whatever the model
// sends: a reply's bytes (each attempt's, as the upstream sent them, withheld blocks
// included) and the events of the turn's attempts together. Zero means no bound.
type Limits struct {
	ReplyBytes int
	Events     int
}

// Result is what one attempt produced, complete or not.
type Result struct {
	Text              string // the forwarded (filtered) text, what the client assembled
	Blocks            []thinkingml.Block
	ToolCalls         []store.ToolCall // every finished MCP call, in order
	ResponseID        string
	Model             string
	UpstreamRequestID string
	Usage             *events.Usage
}

// Handler runs attempts against one upstream.
type Handler struct {
	up     Streamer
	idle   time.Duration
	limits Limits
}

// New returns a handler that cuts a stream after idle without upstream events (0: no limit)
// and ends a turn past limits.
func New(up Streamer, idle time.Duration, limits Limits) *Handler {
	return &Handler{up: up, idle: idle, limits: limits}
}

// Run streams one attempt, the first. On error it still returns what arrived, so the
// partial text can be kept; a stream that ends without its terminal event is an error,
// never a short reply.
func (h *Handler) Run(ctx context.Context, req upstream.Request, sink Sink) (Result, error) {
	var res Result
	var events int
	err := h.run(ctx, &req, sink, 1, &res, &events)
	return res, err
}

// run streams attempt number into res (see Run), counting the events it sends in events
// (the turn's count so far). It takes and fills pointers: by value, the request and the
// result would each be copied into the frame of every caller that waits on the stream.
func (h *Handler) run(ctx context.Context, req *upstream.Request, sink Sink, number int, res *Result, events *int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(h.idleLimit(), func() { cancel(ErrIdle) })
	defer idle.Stop()

	a := attempt{sink: sink, filter: thinkingml.NewFilter(), started: map[string]time.Time{}, res: res,
		limits: h.limits, events: events}
	var sent atomic.Int64 // the attempt's requests so far
	trace := func(s upstream.Sent) { sink.Trace(number, int(sent.Add(1)), s) }
	var err error
	for ev, serr := range h.up.Stream(upstream.WithTrace(ctx, trace), *req) {
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
		err = upstream.ErrNoTerminal
	}
	if ferr := a.flush(ctx); err == nil {
		err = ferr
	}
	a.finish()
	return err
}

func (h *Handler) idleLimit() time.Duration {
	if h.idle <= 0 {
		return 24 * time.Hour
	}
	return h.idle
}

// attempt is the state of one streamed attempt.
type attempt struct {
	sink      Sink
	filter    *thinkingml.Filter
	text      strings.Builder
	res       *Result // the caller's, filled as the stream goes
	completed bool
	started   map[string]time.Time // tool call id → start
	limits    Limits
	bytes     int  // the reply's bytes as sent
	events    *int // the turn's events so far
}

// spend counts one event and the reply's new bytes against the limits.
func (a *attempt) spend(bytes int) error {
	*a.events++
	a.bytes += bytes
	if a.limits.Events > 0 && *a.events > a.limits.Events || a.limits.ReplyBytes > 0 && a.bytes > a.limits.ReplyBytes {
		return ErrReplyTooLarge
	}
	return nil
}

func (a *attempt) handle(ctx context.Context, ev upstream.Event) error {
	if ev.Kind == upstream.EventTextDelta || ev.Kind == upstream.EventToolCallStarted || ev.Kind == upstream.EventToolCallDone {
		if err := a.spend(len(ev.Delta)); err != nil {
			return err
		}
	}
	switch ev.Kind {
	case upstream.EventCreated:
		a.res.ResponseID, a.res.Model, a.res.UpstreamRequestID = ev.ResponseID, ev.Model, ev.UpstreamRequestID
		return a.sink.Routed(ctx, ev.Provider, ev.EndpointID, ev.Model, ev.UpstreamRequestID)
	case upstream.EventTextDelta:
		out, blocks := a.filter.Write(ev.Delta)
		a.res.Blocks = append(a.res.Blocks, blocks...)
		return a.forward(ctx, out)
	case upstream.EventToolCallStarted:
		a.started[ev.Tool.ID] = time.Now()
		return a.sink.ToolCall(ctx, ev.Tool.ServerLabel, ev.Tool.Name, "started")
	case upstream.EventToolCallDone:
		return a.toolDone(ctx, ev.Tool)
	case upstream.EventCompleted:
		a.completed = true
		if ev.ResponseID != "" {
			a.res.ResponseID = ev.ResponseID
		}
		if ev.Model != "" {
			a.res.Model = ev.Model
		}
		if u := ev.Usage; u != nil {
			a.res.Usage = &events.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
		}
	}
	return nil
}

// toolDone records a finished MCP call, timed from its start event, and announces it.
func (a *attempt) toolDone(ctx context.Context, c *upstream.ToolCall) error {
	rec := store.ToolCall{
		ServerLabel: c.ServerLabel, Name: c.Name, Arguments: arguments(c.Arguments),
		Status: store.ToolSuccess, Output: c.Output,
	}
	if t, ok := a.started[c.ID]; ok {
		rec.DurationMS = time.Since(t).Milliseconds()
	}
	state := "completed"
	if c.Failed {
		rec.Status, rec.Error, rec.Output, state = store.ToolFailure, c.Error, "", "failed"
	}
	a.res.ToolCalls = append(a.res.ToolCalls, rec)
	return a.sink.ToolCall(ctx, c.ServerLabel, c.Name, state)
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
	// A cancelled turn still forwards its tail (the log takes it while it has room): the
	// partial text is kept, in the log too.
	return a.forward(ctx, out)
}

// finish completes the result with the text forwarded.
func (a *attempt) finish() { a.res.Text = a.text.String() }
