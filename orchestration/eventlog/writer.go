package eventlog

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// ErrNotBegun is what appends and [Writer.Wait] return once [Writer.Begun] said the
// message's first events were never written: nothing of the message exists.
var ErrNotBegun = errors.New("eventlog: the message's begin did not commit")

// Writer appends the events of one message. It is not safe for concurrent use (but for
// Trace and Begun): a message has exactly one producer, which is what makes positions
// gap-free without a database sequence.
type Writer struct {
	log    *Log
	s      *stream
	traces traceBook
	deltas int // content deltas appended: traces ride from the second on
	// last is when the last event was appended and whether it was a delta: a delta after
	// another event or after a pause is one a client waits on (nudge).
	last      time.Time
	lastDelta bool
	// finished are the traces the last Finish carried: a finish the store refuses is
	// followed by another, which carries them again.
	finished []store.Trace
}

// Trace reports a request the message's turn sent upstream: attempt is the turn's attempt
// and seq the request's number within it (a failover, a chat tool round add one). Its
// redacted copy is written once the message's first content delta is out (with the next
// delta's commit, or alone soon after), not with that first delta, whose commit a client
// waits on; what is left goes with the terminal event (traceBook). It may be called
// from another goroutine than the writer's own.
func (w *Writer) Trace(attempt, seq int, s upstream.Sent) { w.traces.add(attempt, seq, s) }

// Begun ends an [Opening.Unwritten]: nil says the first events are committed, and the
// events held meanwhile go on to the database; an error says they never will be, and the
// message is given up (its events dropped unseen, later appends failing with
// [ErrNotBegun]). It may be called from another goroutine than the writer's own, once.
func (w *Writer) Begun(err error) {
	s := w.s
	s.mu.Lock()
	if !s.held {
		s.mu.Unlock()
		return
	}
	s.held = false
	if err != nil {
		s.notBegun = true
		s.mu.Unlock()
		s.publish(0, true)
		w.log.forget(s)
		return
	}
	wakes := s.change() // cursors and Opened see the first events now
	s.mu.Unlock()
	callAll(wakes)
	w.log.queue(s)
}

// Opened waits until the message's first events are committed (at once unless the
// opening was [Opening.Unwritten]): nil, or [ErrNotBegun] when they never will be, or
// ctx's error. A producer that writes anything of the message's outside the log waits
// for it first.
func (w *Writer) Opened(ctx context.Context) error {
	s := w.s
	for {
		s.mu.Lock()
		held, notBegun, changed := s.held, s.notBegun, s.changed
		s.mu.Unlock()
		switch {
		case notBegun:
			return fmt.Errorf("open %s: %w", s.id, ErrNotBegun)
		case !held:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("open %s: %w", s.id, ctx.Err())
		}
	}
}

// Append adds an event with the given name and payload and returns its position. Clients
// see it once it is committed, usually within one database round trip. It blocks only while
// the message holds too many uncommitted events (the database is down or far behind),
// until ctx ends.
func (w *Writer) Append(ctx context.Context, name string, data any) (int64, error) {
	return w.append(ctx, store.Event{Name: name}, data)
}

// AppendWithStatus is [Writer.Append] for an event that also moves the message row to
// status, in the same commit (status working moves it to streaming).
func (w *Writer) AppendWithStatus(ctx context.Context, name string, data any, status string) (int64, error) {
	return w.append(ctx, store.Event{Name: name, Status: status}, data)
}

// Finish appends the terminal event with the message's outcome (result.Status must be
// terminal; see store.Event.Finish): the message row is finished in the same commit that
// makes the event visible. It never waits for room, so a turn can always end. A finish the
// store may refuse (its settlement records a strategy, which must be the user's) waits for
// its commit, while ctx lives, and returns [ErrRefused] when it was refused: the event was
// dropped unseen and the producer ends the message with another.
func (w *Writer) Finish(ctx context.Context, name string, data any, result *store.Message) (int64, error) {
	w.finished = append(w.finished, w.traces.all()...)
	if len(w.finished) > 0 {
		if result.Records == nil {
			result.Records = &store.TurnRecords{}
		}
		result.Records.Traces = append(result.Records.Traces, w.finished...)
	}
	seq, err := w.append(ctx, store.Event{Name: name, Finish: result}, data)
	if err != nil || !mayBeRefused(result) {
		return seq, err
	}
	if err := w.Wait(ctx); errors.Is(err, ErrRefused) {
		return 0, err
	}
	return seq, nil // lost, or no longer waited for: nothing else to do
}

// mayBeRefused reports a finish the store may refuse: one whose settlement records a
// strategy (store.Unwritten).
func mayBeRefused(result *store.Message) bool {
	return result.Settlement != nil && result.Settlement.Strategy != nil
}

func (w *Writer) append(ctx context.Context, ev store.Event, data any) (int64, error) {
	delta := ev.Name == events.ContentDelta
	if delta {
		if w.deltas++; w.deltas > 1 {
			w.handOverTraces()
		}
	}
	payload, err := encode(data)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	awaited := delta && (!w.lastDelta || now.Sub(w.last) >= w.log.tune.pause)
	w.last, w.lastDelta = now, delta
	ev.MessageID, ev.Data, ev.CreatedAt = w.s.id, payload, now.UTC()
	seq, queue, err := w.add(ctx, ev)
	if err != nil {
		return 0, err
	}
	if queue {
		w.log.markDirty(w.s)
	}
	if awaited {
		w.nudge(ctx)
		if w.deltas == 1 {
			// The first delta is out (or its commit is slow): the request need not wait for the
			// next delta, which a slow model may not send for a long while.
			w.handOverTraces()
		}
		w.last = time.Now() // a pause is the producer's input's, not this wait
	}
	return seq, nil
}

// handOverTraces hands the traces whose redaction is over to the log (record): with a
// delta's commit, or alone soon after. A lost message needs no traces, and after the
// terminal event the finish took them.
func (w *Writer) handOverTraces() {
	if traces := w.traces.ready(); len(traces) > 0 {
		_ = w.record(traces) // its only errors are ErrLost and ErrEnded: see above
	}
}

// add puts ev into the stream once there is room for it, and says whether the stream must
// now be queued for the committer (it was not queued, nor is it held).
func (w *Writer) add(ctx context.Context, ev store.Event) (int64, bool, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.notBegun:
			return 0, false, fmt.Errorf("append to %s: %w", s.id, ErrNotBegun)
		case s.lost:
			return 0, false, fmt.Errorf("append to %s: %w", s.id, ErrLost)
		case s.terminal:
			return 0, false, fmt.Errorf("append to %s: %w", s.id, ErrEnded)
		}
		if isTerminal(ev) || len(s.events)-s.committed < w.log.tune.maxPending {
			break
		}
		changed := s.changed // closed by the next commit
		s.mu.Unlock()
		select {
		case <-changed:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			return 0, false, fmt.Errorf("append to %s: waiting for the database: %w", s.id, ctx.Err())
		}
	}
	ev.Seq = s.last() + 1
	s.events = append(s.events, ev)
	s.terminal = isTerminal(ev)
	if s.queued || s.held {
		return ev.Seq, false, nil
	}
	s.queued = true
	return ev.Seq, true, nil
}

// record hands over traces of the message's upstream requests: they are written with the
// next commit that takes any of its events (one appended already, or one appended within
// tuning.traceWait), under the same fence, or else on their own once that is over
// (store.RecordTraces). It never waits; after a terminal event it is [ErrEnded] (the
// finish records what is left), and [ErrLost] once the message is lost.
func (w *Writer) record(traces []store.Trace) error {
	s := w.s
	s.mu.Lock()
	switch {
	case s.lost:
		s.mu.Unlock()
		return fmt.Errorf("record traces of %s: %w", s.id, ErrLost)
	case s.terminal:
		s.mu.Unlock()
		return fmt.Errorf("record traces of %s: %w", s.id, ErrEnded)
	}
	s.traces = append(s.traces, traces...)
	wait := !s.queued && !s.tracesWait
	s.tracesWait = s.tracesWait || wait
	s.mu.Unlock()
	if wait { // the timer only queues the stream; after Close it finds nobody to commit for
		time.AfterFunc(w.log.tune.traceWait, func() { w.log.tracesWaited(s) })
	}
	return nil
}

// nudge holds the producer until what was appended is committed, for at most
// tuning.nudgeWait, then yields once, so the committer and the client's stream run before
// the producer goes on (see the package doc).
func (w *Writer) nudge(ctx context.Context) {
	s := w.s
	s.mu.Lock()
	target := s.last()
	s.mu.Unlock()
	timer := time.NewTimer(w.log.tune.nudgeWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		committed, lost, changed := s.base+int64(s.committed) >= target, s.lost, s.changed
		s.mu.Unlock()
		if committed || lost {
			runtime.Gosched() // the client's stream, woken by the same commit, writes the event
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Wait blocks until every event appended so far is committed (nil), the message is lost
// ([ErrLost], or [ErrNotBegun]), its finish was refused ([ErrRefused], once: the writer
// may then Finish again) or ctx ends.
func (w *Writer) Wait(ctx context.Context) error {
	s := w.s
	for {
		s.mu.Lock()
		done, lost, notBegun, refused, changed := s.committed == len(s.events) && !s.held, s.lost, s.notBegun, s.refused, s.changed
		s.refused = false
		s.mu.Unlock()
		switch {
		case notBegun:
			return fmt.Errorf("wait for %s: %w", s.id, ErrNotBegun)
		case lost:
			return fmt.Errorf("wait for %s: %w", s.id, ErrLost)
		case refused:
			return fmt.Errorf("wait for %s: %w", s.id, ErrRefused)
		case done:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", s.id, ctx.Err())
		}
	}
}
