package eventlog

import (
	"context"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// writeLoop is the single goroutine that moves queued events into the database in batches:
// it waits for one event, gathers more for up to FlushInterval or MaxBatch, and inserts them
// in one round trip. On Close it drains the queue before returning.
func (l *Log) writeLoop() {
	defer close(l.done)
	for {
		var first *pending
		select {
		case first = <-l.queue:
		case <-l.stop:
			l.drain()
			return
		}
		l.flush(l.gather(first))
	}
}

func (l *Log) gather(first *pending) []*pending {
	batch := []*pending{first}
	timer := time.NewTimer(l.opts.FlushInterval)
	defer timer.Stop()
	for len(batch) < l.opts.MaxBatch {
		select {
		case p := <-l.queue:
			batch = append(batch, p)
		case <-timer.C:
			return batch
		case <-l.stop:
			return batch
		}
	}
	return batch
}

func (l *Log) drain() {
	for {
		var batch []*pending
	collect:
		for len(batch) < l.opts.MaxBatch {
			select {
			case p := <-l.queue:
				batch = append(batch, p)
			default:
				break collect
			}
		}
		if len(batch) == 0 {
			return
		}
		l.flush(batch)
	}
}

// flush inserts one batch, retrying briefly: a lost event would be a gap in every replay.
func (l *Log) flush(batch []*pending) {
	evs := make([]store.Event, len(batch))
	for i, p := range batch {
		evs[i] = p.ev
	}
	var err error
	for attempt, backoff := 0, 50*time.Millisecond; attempt < 5; attempt, backoff = attempt+1, backoff*2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = l.store.AppendEvents(ctx, evs)
		cancel()
		if err == nil {
			break
		}
		l.logger.Warn("event log write failed", "events", len(evs), "attempt", attempt+1, "err", err)
		time.Sleep(backoff)
	}
	if err != nil {
		l.logger.Error("event log write gave up", "events", len(evs), "err", err)
	}
	highest := make(map[*stream]int64, 1)
	for _, p := range batch {
		if p.ev.Seq > highest[p.stream] {
			highest[p.stream] = p.ev.Seq
		}
	}
	for s, seq := range highest {
		s.markPersisted(seq, err)
	}
}
