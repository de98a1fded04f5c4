package eventlog

import (
	"context"
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// Writer appends the events of one message. It is not safe for concurrent use: a message has
// exactly one producer, which is what makes positions gap-free without a database sequence.
type Writer struct {
	log *Log
	s   *stream
}

// MessageID names the message this writer appends to.
func (w *Writer) MessageID() string { return w.s.messageID }

// NextSeq is the position the next appended event will get; the turn stores it as the
// message's last_event_id before appending its terminal event.
func (w *Writer) NextSeq() int64 {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.last() + 1
}

// Append adds an event with the given name and payload and returns its position. Clients of
// this process see it at once; the database sees it within the flush interval. It blocks
// only when the writer queue is full (the database is far behind), until ctx ends.
func (w *Writer) Append(ctx context.Context, name string, data any) (int64, error) {
	payload, err := encode(data)
	if err != nil {
		return 0, err
	}
	ev, err := w.add(name, payload)
	if err != nil {
		return 0, err
	}
	select {
	case w.log.queue <- &pending{ev: ev, stream: w.s}:
		return ev.Seq, nil
	case <-ctx.Done():
		return ev.Seq, fmt.Errorf("eventlog: queue event %d: %w", ev.Seq, ctx.Err())
	}
}

func (w *Writer) add(name string, payload store.JSON) (store.Event, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return store.Event{}, fmt.Errorf("eventlog: message %s already ended", s.messageID)
	}
	ev := store.Event{MessageID: s.messageID, Seq: s.last() + 1, Name: name, Data: payload, CreatedAt: time.Now().UTC()}
	s.events = append(s.events, ev)
	s.ended = isTerminal(ev)
	close(s.changed)
	s.changed = make(chan struct{})
	return ev, nil
}

// Close waits until every appended event is in the database, then retires the live stream
// so later clients read from the database. It returns the first write error, if any: the
// events stay in memory for the clients already following, but are not durable.
func (w *Writer) Close(ctx context.Context) error {
	defer w.log.forget(w.s)
	s := w.s
	for {
		s.mu.Lock()
		done, err, wait := s.persisted >= s.last(), s.writeErr, s.flushed
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return fmt.Errorf("eventlog: flush message %s: %w", s.messageID, ctx.Err())
		}
	}
}
