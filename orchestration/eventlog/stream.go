package eventlog

import (
	"sync"

	"github.com/phaseflow/phaseflow/store"
)

// stream is the in-memory log of one message produced in this process. The producer
// appends to events; the committer takes the pending tail, commits it and advances
// committed; cursors read only events[:committed] (never a copy: committed events are not
// modified again, and append never moves them for a holder of an older slice header).
// Only the last keep committed events stay: the older ones are let go (base moves on), and
// a cursor behind them reads them from the database.
type stream struct {
	id     string
	onLost func()
	keep   int

	mu         sync.Mutex
	base       int64         // seq of the event before events[0]
	events     []store.Event // committed prefix, then events still to be committed
	committed  int           // events[:committed] are in the database
	taken      int           // events[:taken] are committed or in the committer's hands
	queued     bool          // in the log's dirty list: the committer will take what is pending
	held       bool          // its first events are still being written (Opening.Unwritten): nothing goes on
	notBegun   bool          // they never were (Writer.Begun): the message does not exist
	tracesWait bool          // a timer will queue the stream's traces (see Writer.record)
	changed    chan struct{} // closed when committed grows or the stream ends (cursors, waiting producers)
	gen        uint64        // counts the changes: a cursor arms its wake once per change
	wakes      []func()      // cursors' wakes (Cursor.NextFunc), called once at the next change
	terminal   bool          // a terminal event was appended
	done       bool          // nothing more will be committed here: terminal committed, or lost
	lost       bool          // another replica owns the message, or its events could not be written
	refused    bool          // the store refused the finish; cleared when the producer learns it (Wait)
	traces     []store.Trace // handed over by Writer.record, to ride with the next commit of events
	riding     []store.Trace // traces on the batch in the committer's hands
}

func newStream(id string, o Opening, keep int) *stream {
	s := &stream{
		id: id, onLost: o.OnLost, keep: keep, base: o.LastSeq - int64(len(o.Committed)),
		events: append([]store.Event(nil), o.Committed...), committed: len(o.Committed), taken: len(o.Committed),
		changed: make(chan struct{}), gen: 1, held: o.Unwritten,
	}
	if s.onLost == nil {
		s.onLost = func() {}
	}
	return s
}

// last returns the seq of the newest appended event.
func (s *stream) last() int64 { return s.base + int64(len(s.events)) }

// pendingCount is the number of appended events not yet committed.
func (s *stream) pendingCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost {
		return 0
	}
	return len(s.events) - s.committed
}

// committedAfter returns the committed events with seq > seq (a window of the shared slice),
// the channel closed on the next change, and whether the events after seq must be read
// from the database instead: the stream was lost, or let them go (see keep). A wake (Cursor.NextFunc) is also called once
// at the next change, unless armed says it already waits for it; armed is set to the change
// it waits for.
func (s *stream) committedAfter(seq int64, wake func(), armed *uint64) ([]store.Event, <-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if wake != nil && *armed != s.gen {
		s.wakes = append(s.wakes, wake)
		*armed = s.gen
	}
	if seq < s.base {
		return nil, s.changed, true
	}
	i := seq - s.base
	if i >= int64(s.committed) || s.held {
		return nil, s.changed, s.lost
	}
	return s.events[i:s.committed:s.committed], s.changed, s.lost
}

// change wakes whoever waits for the stream's next change; it is called with s.mu held and
// returns the cursors' wakes, which the caller calls once it has let go of the lock.
func (s *stream) change() []func() {
	close(s.changed)
	s.changed = make(chan struct{})
	s.gen++
	wakes := s.wakes
	s.wakes = nil
	return wakes
}

// take hands up to n pending events to the committer, appending them to batch, and
// reports how many it took and whether more remain. Traces handed over (Writer.record)
// ride on the first event taken; with none to take, they are returned alone, for a commit
// of their own (store.RecordTraces).
func (s *stream) take(n int, batch []store.Event) (_ []store.Event, k int, more bool, alone []store.Trace) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost {
		s.queued = false
		return batch, 0, false, nil
	}
	end := min(len(s.events), s.taken+n)
	batch = append(batch, s.events[s.taken:end]...)
	k = end - s.taken
	switch {
	case len(s.traces) == 0:
	case k > 0: // on the batch's copy: followers read s.events unlocked
		batch[len(batch)-k].Traces = s.traces
		s.riding, s.traces = s.traces, nil
	default:
		alone, s.traces = s.traces, nil
	}
	s.taken = end
	more = s.taken < len(s.events)
	s.queued = more // the committer puts it back in the list when it took only part
	return batch, k, more, alone
}

// pending reports whether s holds events or traces the committer has not taken; s.mu is
// held.
func (s *stream) pending() bool { return s.taken < len(s.events) || len(s.traces) > 0 }

// refuse takes back the stream's next n events, which the store did not write because it
// refused the finish that ends them: the terminal event, the last of them, is dropped
// (nobody saw it; the producer appends another), and the others are pending again. It
// reports whether any are.
func (s *stream) refuse(n int) bool {
	s.mu.Lock()
	s.events = s.events[:s.taken-1] // the terminal event: nothing can follow it
	s.taken -= n
	s.traces, s.riding = append(s.riding, s.traces...), nil
	s.terminal, s.refused, s.queued = false, true, false
	more := s.taken < len(s.events)
	wakes := s.change()
	s.mu.Unlock()
	callAll(wakes)
	return more
}

// publish records the outcome of a commit of the stream's next n events: committed (they
// become visible) or lost (the stream ends here). It reports whether the stream is done.
func (s *stream) publish(n int, lost bool) bool {
	s.mu.Lock()
	s.riding = nil // written, or lost with the message
	if lost {
		s.lost, s.done = true, true
		s.traces = nil
		s.events = s.events[:s.committed:s.committed] // drop what no client has seen
		s.taken = s.committed
	} else {
		s.committed += n
		if s.terminal && s.committed == len(s.events) {
			s.done = true
		}
		s.letGo()
	}
	done := s.done
	wakes := s.change()
	s.mu.Unlock()
	callAll(wakes)
	return done
}

// letGo drops the committed events before the last keep once they are as many again, into
// a fresh array, so the old one is freed when the cursors reading windows of it move on;
// s.mu is held. Copying half of what was kept at most once per keep commits costs a
// constant per event.
func (s *stream) letGo() {
	drop := s.committed - s.keep
	if s.keep <= 0 || drop < s.keep {
		return
	}
	s.events = append(make([]store.Event, 0, len(s.events)-drop+s.keep), s.events[drop:]...)
	s.base += int64(drop)
	s.committed -= drop
	s.taken -= drop
}

// callAll calls each of fns.
func callAll(fns []func()) {
	for _, fn := range fns {
		fn()
	}
}
