package eventlog

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// permanentAttempts is how often a commit that fails for a reason other than an unreachable
// database is tried before its messages are committed one by one, to find the culprit.
const permanentAttempts = 3

// batch is one group commit: the events taken from each stream, in order, and the traces
// of streams that had traces and no event to carry them.
type batch struct {
	events []store.Event
	parts  []part
	alone  []lone
}

// lone is the traces of one stream taken without an event (stream.take).
type lone struct {
	s      *stream
	traces []store.Trace
}

// part is the share of one stream in a batch.
type part struct {
	s *stream
	n int
}

// run is the committer goroutine: it sleeps until there is work, then commits batches until
// nothing is waiting. A batch is simply everything that piled up while the previous commit
// ran, so under load commits grow instead of multiplying, and a lone event waits for no
// timer. On stop it drains what is left (see Close).
func (l *Log) run() {
	defer close(l.done)
	b := &batch{}
	for {
		select {
		case <-l.kick:
		case <-l.stop:
			l.flushAll(b)
			return
		}
		l.flushAll(b)
	}
}

// flushAll commits batches, each gathered in b, until none is waiting or the log is
// abandoned. The committer reuses b's slices from one commit to the next (it is alone, and
// nothing keeps a batch after publish): built anew, each commit grew a slice of events by
// doubling, a large share of every turn's allocations.
func (l *Log) flushAll(b *batch) {
	defer b.reset() // hold no payload while idle
	for {
		b.reset()
		l.take(b)
		if len(b.events) == 0 && len(b.alone) == 0 {
			return
		}
		if len(b.events) > 0 {
			un, err := l.commit(b)
			if errors.Is(err, errAbandoned) {
				return
			}
			l.publish(b, un)
		}
		if err := l.recordAlone(b.alone); errors.Is(err, errAbandoned) {
			return
		}
	}
}

// reset empties b for the next commit, keeping its room but not the events' payloads.
func (b *batch) reset() {
	clear(b.events)
	clear(b.parts)
	clear(b.alone)
	b.events, b.parts, b.alone = b.events[:0], b.parts[:0], b.alone[:0]
}

// take gathers into b, empty, up to MaxBatch waiting events, oldest dirty stream first. A
// stream with more than fits goes to the back of the queue, so one long message cannot
// starve the others.
func (l *Log) take(b *batch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.dirty) > 0 && len(b.events) < l.tune.maxBatch {
		s := l.dirty[0]
		l.dirty = l.dirty[1:]
		var n int
		var more bool
		var alone []store.Trace
		b.events, n, more, alone = s.take(l.tune.maxBatch-len(b.events), b.events)
		if n > 0 {
			b.parts = append(b.parts, part{s: s, n: n})
		}
		if len(alone) > 0 {
			b.alone = append(b.alone, lone{s: s, traces: alone})
		}
		if more {
			l.dirty = append(l.dirty, s)
		}
	}
}

// errAbandoned means Close's deadline passed while the database was still failing.
var errAbandoned = errors.New("eventlog: abandoned at close")

// commit writes b, retrying while the database is unreachable (as long as it takes: the
// orchestrator decides when a turn has waited too long) and a few times on other errors,
// after which each message is tried alone and those that still fail are reported lost.
func (l *Log) commit(b *batch) (store.Unwritten, error) {
	var un store.Unwritten
	err := l.retry("event log commit", "events", len(b.events), func() (err error) {
		un, err = l.commitOnce(b.events)
		return err
	})
	switch {
	case errors.Is(err, errAbandoned):
		return store.Unwritten{}, err
	case err != nil:
		l.logger.Error("event log commit keeps failing; committing its messages one by one", "events", len(b.events), "err", err)
		return l.commitEach(b), nil
	}
	return un, nil
}

// recordAlone writes the traces taken without an event, stream by stream, retrying as
// commit does. Traces a store keeps refusing, or whose message this replica no longer
// writes, are dropped: they are a record of what was sent, and the message's next commit of
// events finds it lost.
func (l *Log) recordAlone(alone []lone) error {
	for _, a := range alone {
		var written bool
		err := l.retry("recording traces", "traces", len(a.traces), func() (err error) {
			ctx, cancel := context.WithTimeout(context.Background(), l.tune.commitTimeout)
			defer cancel()
			written, err = l.store.RecordTraces(ctx, l.owner, a.s.id, a.traces)
			return err
		})
		switch {
		case errors.Is(err, errAbandoned):
			return err
		case err != nil:
			l.logger.Error("traces of a message cannot be written; dropping them", "message_id", a.s.id, "err", err)
		case !written:
			l.logger.Debug("traces of a message this replica no longer writes; dropping them", "message_id", a.s.id)
		}
	}
	return nil
}

// retry calls write until it succeeds (nil), waiting with backoff while the database is
// unreachable, as long as it takes, and giving up with write's error after
// permanentAttempts other failures, or with errAbandoned when Close's deadline passes. Its
// warnings say what failed and how many units (events, traces) it writes.
func (l *Log) retry(what, unit string, n int, write func() error) error {
	delay := l.tune.retryMin
	for attempt := 1; ; attempt++ {
		err := write()
		if err == nil {
			l.failingSince.Store(0)
			return nil
		}
		retryable := store.IsUnavailable(err) || errors.Is(err, context.DeadlineExceeded)
		if !retryable && attempt >= permanentAttempts {
			return err
		}
		l.failingSince.CompareAndSwap(0, time.Now().UnixNano())
		l.logger.Warn(what+" failed; retrying", unit, n, "attempt", attempt, "retry_in", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-l.abandon:
			return errAbandoned
		}
		delay = min(2*delay, l.tune.retryMax)
	}
}

func (l *Log) commitOnce(evs []store.Event) (store.Unwritten, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.tune.commitTimeout)
	defer cancel()
	start := time.Now()
	un, err := l.store.CommitEvents(ctx, l.owner, evs)
	if l.opts.Observe != nil {
		l.opts.Observe(len(evs), time.Since(start), err)
	}
	return un, err
}

// commitEach commits each stream's part of b on its own; a part that fails is lost.
func (l *Log) commitEach(b *batch) store.Unwritten {
	var all store.Unwritten
	i := 0
	for _, p := range b.parts {
		evs := b.events[i : i+p.n]
		i += p.n
		un, err := l.commitOnce(evs)
		if err != nil {
			l.logger.Error("events of a message cannot be written; giving the message up", "message_id", p.s.id, "err", err)
			un = store.Unwritten{Lost: []string{p.s.id}}
		}
		all.Lost, all.Refused = append(all.Lost, un.Lost...), append(all.Refused, un.Refused...)
	}
	return all
}

// publish makes a committed batch visible, stream by stream, retires finished streams,
// tells the producers of lost ones and hands refused finishes back to theirs.
func (l *Log) publish(b *batch, un store.Unwritten) {
	for _, p := range b.parts {
		if slices.Contains(un.Refused, p.s.id) {
			l.logger.Debug("the store refused a message's finish; its producer ends it otherwise", "message_id", p.s.id) // the producer logs why
			if p.s.refuse(p.n) {
				l.queue(p.s) // the part's other events go with the next batch
			}
			continue
		}
		isLost := slices.Contains(un.Lost, p.s.id)
		if isLost { // tell the producer before anyone can see the stream end
			l.logger.Warn("message lost to another replica; its producer stops", "message_id", p.s.id)
			p.s.onLost()
		}
		if p.s.publish(p.n, isLost) {
			l.forget(p.s)
		}
		l.waker.wake(p.s.id) // cursors of this message that read the database
	}
}
