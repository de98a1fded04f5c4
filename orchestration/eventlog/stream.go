package eventlog

import (
	"sync"

	"github.com/phaseflow/phaseflow/store"
)

// stream is the in-memory log of one live message. The producer appends; cursors copy from
// it under the lock and wait on changed, which is closed and replaced on every append (a
// broadcast that never blocks the producer).
type stream struct {
	messageID string

	mu        sync.Mutex
	base      int64 // seq of the event before events[0]
	events    []store.Event
	changed   chan struct{}
	ended     bool  // a terminal event was appended
	persisted int64 // highest seq known to be in the database
	flushed   chan struct{}
	writeErr  error
}

func newStream(messageID string, lastSeq int64) *stream {
	return &stream{
		messageID: messageID,
		base:      lastSeq,
		changed:   make(chan struct{}),
		persisted: lastSeq,
		flushed:   make(chan struct{}),
	}
}

// last returns the seq of the newest event.
func (s *stream) last() int64 { return s.base + int64(len(s.events)) }

// after copies the events with seq > seq and returns the channel closed on the next append.
func (s *stream) after(seq int64) ([]store.Event, <-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Event
	if i := seq - s.base; i < int64(len(s.events)) {
		if i < 0 {
			i = 0
		}
		out = append(out, s.events[i:]...)
	}
	return out, s.changed, s.ended
}

// markPersisted records that events up to seq are in the database (or that writing failed).
func (s *stream) markPersisted(seq int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq > s.persisted {
		s.persisted = seq
	}
	if err != nil && s.writeErr == nil {
		s.writeErr = err
	}
	close(s.flushed)
	s.flushed = make(chan struct{})
}
