package eventlog

import (
	"context"
	"fmt"

	"github.com/phaseflow/phaseflow/store"
)

// pageSize bounds one database read of a cursor, so a long log is replayed in pages.
const pageSize = 512

// Cursor follows one message's log from a position on. It is used by one client connection.
type Cursor struct {
	log       *Log
	messageID string
	after     int64
	live      *stream
	ended     bool
}

// Follow returns a cursor that yields the events of messageID with seq > after. Check that
// the caller may see the message before following it.
func (l *Log) Follow(messageID string, after int64) *Cursor {
	return &Cursor{log: l, messageID: messageID, after: after, live: l.lookup(messageID)}
}

// Position is the seq of the last event the cursor returned (or its starting point).
func (c *Cursor) Position() int64 { return c.after }

// Live reports whether the cursor reads a message being produced in this process.
func (c *Cursor) Live() bool { return c.live != nil }

// Ended reports whether the cursor has returned the terminal event.
func (c *Cursor) Ended() bool { return c.ended }

// Next returns the events available now after the cursor, in order, and a channel that is
// closed when more may be available. It does not block: the caller waits on the channel
// together with its own timers (heartbeats) and its context.
func (c *Cursor) Next(ctx context.Context) ([]store.Event, <-chan struct{}, error) {
	if c.live != nil {
		evs, changed, _ := c.live.after(c.after)
		c.advance(evs)
		return evs, changed, nil
	}
	evs, err := c.log.store.ListEvents(ctx, c.messageID, c.after, pageSize)
	if err != nil {
		return nil, nil, fmt.Errorf("eventlog: read message %s after %d: %w", c.messageID, c.after, err)
	}
	c.advance(evs)
	if len(evs) == pageSize {
		return evs, closedChan(), nil
	}
	return evs, c.log.waker.wait(c.messageID, c.log.opts.PollInterval), nil
}

func (c *Cursor) advance(evs []store.Event) {
	for _, ev := range evs {
		c.after = ev.Seq
		if isTerminal(ev) {
			c.ended = true
		}
	}
}

func closedChan() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
