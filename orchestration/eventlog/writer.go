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
	return w.append(ctx, store.Event{Name: name}, data)
}

// AppendStatus is [Writer.Append] for an event that moves the message to status (the
// working event moves it to streaming), in the same commit.
func (w *Writer) AppendStatus(ctx context.Context, name string, data any, status string) (int64, error) {
	return w.append(ctx, store.Event{Name: name, Status: status}, data)
}

// Finish appends the terminal event with the message's outcome (result.Status must be
// terminal; see store.Event.Finish): the message row is finished in the same commit that
// makes the event visible. It never waits for room, so a turn can always end.
func (w *Writer) Finish(ctx context.Context, name string, data any, result *store.Message) (int64, error) {
	return w.append(ctx, store.Event{Name: name, Finish: result}, data)
}

func (w *Writer) append(ctx context.Context, ev store.Event, data any) (int64, error) {
	payload, err := encode(data)
	if err != nil {
		return 0, err
	}
	ev.MessageID, ev.Data, ev.CreatedAt = w.s.id, payload, time.Now().UTC()
	seq, wasIdle, err := w.add(ctx, ev)
	if err != nil {
		return 0, err
	}
	if wasIdle {
		w.log.markDirty(w.s)
	}
	return seq, nil
}

// add puts ev into the stream once there is room for it, and reports whether the stream
// was idle before (the committer had taken everything), which is when it must be queued.
func (w *Writer) add(ctx context.Context, ev store.Event) (int64, bool, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.lost:
			return 0, false, fmt.Errorf("append to %s: %w", s.id, ErrLost)
		case s.terminal:
			return 0, false, fmt.Errorf("append to %s: %w", s.id, ErrEnded)
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
			return 0, false, fmt.Errorf("append to %s: waiting for the database: %w", s.id, ctx.Err())
		}
	}
	wasIdle := s.taken == len(s.events)
	ev.Seq = s.last() + 1
	s.events = append(s.events, ev)
	s.terminal = isTerminal(ev)
	return ev.Seq, wasIdle, nil
}

// Nudge commits what was appended now and holds the producer until it is committed, for
// at most maxNudgeWait, then yields once. It is for the one event a client is waiting on
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
	s.mu.Lock()
	target := len(s.events)
	s.mu.Unlock()
	timer := time.NewTimer(maxNudgeWait)
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

// maxNudgeWait bounds Nudge: a few commits' time on a loaded database.
const maxNudgeWait = 5 * time.Millisecond

// Wait blocks until every event appended so far is committed (nil), the message is lost
// ([ErrLost]) or ctx ends.
func (w *Writer) Wait(ctx context.Context) error {
	s := w.s
	for {
		s.mu.Lock()
		done, lost, changed := s.committed == len(s.events), s.lost, s.changed
		s.mu.Unlock()
		switch {
		case lost:
			return fmt.Errorf("wait for %s: %w", s.id, ErrLost)
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
