package eventlog

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// Writer appends the events of one message. It is not safe for concurrent use: a message has
// exactly one producer, which is what makes positions gap-free without a database sequence.
type Writer struct {
	log *Log
	s   *stream
}

// Append adds an event with the given name and payload and returns its position. Clients
// see it once it is committed, usually within one database round trip. It blocks only while
// the message holds [Options.MaxPending] uncommitted events (the database is down or far
// behind), until ctx ends.
func (w *Writer) Append(ctx context.Context, name string, data any) (int64, error) {
	return w.append(ctx, store.Event{Name: name}, data, false)
}

// AppendLater is [Writer.Append] for an event that may wait up to [Options.Linger] for
// company: it is committed with the next event appended with Append, Finish or Nudge, or
// alone once the linger is over. Progress events (a status) that the next event usually
// follows within a millisecond or two then cost no commit of their own, and the first
// delta does not queue behind their commits; nobody notices a status a few milliseconds
// late. A non-empty status moves the message to it in the same commit (the working event
// moves it to streaming).
func (w *Writer) AppendLater(ctx context.Context, name string, data any, status string) (int64, error) {
	return w.append(ctx, store.Event{Name: name, Status: status}, data, true)
}

// Finish appends the terminal event with the message's outcome (result.Status must be
// terminal; see store.Event.Finish): the message row is finished in the same commit that
// makes the event visible. It never waits for room, so a turn can always end.
func (w *Writer) Finish(ctx context.Context, name string, data any, result *store.Message) (int64, error) {
	return w.append(ctx, store.Event{Name: name, Finish: result}, data, false)
}

func (w *Writer) append(ctx context.Context, ev store.Event, data any, later bool) (int64, error) {
	payload, err := encode(data)
	if err != nil {
		return 0, err
	}
	ev.MessageID, ev.Data, ev.CreatedAt = w.s.id, payload, time.Now().UTC()
	seq, next, err := w.add(ctx, ev, later)
	if err != nil {
		return 0, err
	}
	switch next {
	case queueNow:
		w.log.markDirty(w.s)
	case queueAfterLinger:
		// The timer's goroutine only queues the stream (a lock and a non-blocking send) and
		// is gone; after Close it finds nobody to commit for, and Close drained what lingered.
		time.AfterFunc(w.log.opts.Linger, func() { w.log.waitOver(w.s, &w.s.lingering) })
	}
	return seq, nil
}

// queueing is what an append leaves to do about the committer.
type queueing int

const (
	queueDone        queueing = iota // the stream is queued, or a linger timer will queue it
	queueNow                         // queue the stream: it was not
	queueAfterLinger                 // start the linger timer that queues the stream
)

// add puts ev into the stream once there is room for it, and says whether the stream must
// now be queued for the committer (it was not, and ev should not wait) or a linger timer
// started (ev may wait, the stream is not queued and no timer runs).
func (w *Writer) add(ctx context.Context, ev store.Event, later bool) (int64, queueing, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.lost:
			return 0, queueDone, fmt.Errorf("append to %s: %w", s.id, ErrLost)
		case s.terminal:
			return 0, queueDone, fmt.Errorf("append to %s: %w", s.id, ErrEnded)
		}
		if isTerminal(ev) || len(s.events)-s.committed < w.log.opts.MaxPending {
			break
		}
		changed := s.changed // closed by the next commit
		s.mu.Unlock()
		select {
		case <-changed:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			return 0, queueDone, fmt.Errorf("append to %s: waiting for the database: %w", s.id, ctx.Err())
		}
	}
	ev.Seq = s.last() + 1
	s.events = append(s.events, ev)
	s.terminal = isTerminal(ev)
	switch {
	case s.queued:
		return ev.Seq, queueDone, nil
	case later && s.lingering:
		return ev.Seq, queueDone, nil
	case later:
		s.lingering = true
		return ev.Seq, queueAfterLinger, nil
	}
	s.queued = true
	return ev.Seq, queueNow, nil
}

// Record hands over traces of the message's upstream requests: they are written with the
// next commit that takes any of its events (one appended already, or one appended within
// [Options.TraceLinger]), under the same fence, or else on their own once that is over
// (store.RecordTraces). A turn records its request once its reply's first delta has
// reached clients: that commit, which the client waits on, then does not write the
// request's kilobytes too, and the turn does not keep them, with the prompt in their
// bodies, until its terminal event while a slow model thinks. It never waits; after a
// terminal event it is [ErrEnded] (the finish records what is left), and [ErrLost] once
// the message is lost.
func (w *Writer) Record(traces []store.Trace) error {
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
	if wait { // like a linger's timer: after Close it finds nobody to commit for
		time.AfterFunc(w.log.opts.TraceLinger, func() { w.log.waitOver(s, &s.tracesWait) })
	}
	return nil
}

// Nudge commits what was appended now and holds the producer until it is committed, for
// at most Options.NudgeWait, then yields once. It is for the one event a client is waiting on
// (an attempt's first delta). A producer parsing a reply whose bytes are already buffered
// never blocks on its own, and on a busy or single-thread scheduler nothing else would run
// until the whole reply was parsed: not the commit loop, not the commit's answer from the
// database (a network wake-up is only picked up when the scheduler runs out of work), and
// not the client's stream that delivers the event. Measured at GOMAXPROCS=1 with
// PostgreSQL, the first delta reached clients with the last. Waiting on the commit lets all
// three run; the bound keeps a slow or unreachable database from stalling the upstream read
// for longer than a client would notice, and the rest of a reply batches as before.
func (w *Writer) Nudge(ctx context.Context) {
	s := w.s
	w.log.queue(s) // what lingers before the event goes with it
	s.mu.Lock()
	target := len(s.events)
	s.mu.Unlock()
	timer := time.NewTimer(w.log.opts.NudgeWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		done, changed := s.committed >= target || s.lost, s.changed
		s.mu.Unlock()
		if done {
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
// ([ErrLost]), its finish was refused ([ErrRefused], once: the writer may then Finish
// again) or ctx ends.
func (w *Writer) Wait(ctx context.Context) error {
	s := w.s
	for {
		s.mu.Lock()
		done, lost, refused, changed := s.committed == len(s.events), s.lost, s.refused, s.changed
		s.refused = false
		s.mu.Unlock()
		switch {
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
