package eventlog

import (
	"context"
	"fmt"

	"github.com/phaseflow/phaseflow/store"
)

// pageSize bounds one database read of a cursor, so a long log is replayed in pages.
const pageSize = 512

// Cursor follows one message's log for one client connection: the events after the client's
// position, then the live tail, until the terminal event.
type Cursor struct {
	log       *Log
	messageID string
	from      int64 // events up to here were seen by the client and are not delivered
	pos       int64 // the last position read from the log
	live      *stream
	ended     bool
	armedLive uint64 // the change of live a wake waits for (NextFunc)
	armedDB   *wait  // the database wait a wake waits for (NextFunc)
	watched   bool   // the message's commits notify (store.Watch), or need not
}

// Follow returns a cursor over messageID that delivers the events with seq > after. last is
// the message's last_event_id as the caller read it (events up to it exist): a client that
// claims to have seen more (a reconnect past the end, or from a future position) is read
// from there, so it still sees the terminal event and its stream ends with the message.
// Check that the caller may see the message before following it.
func (l *Log) Follow(messageID string, after, last int64) *Cursor {
	c := &Cursor{log: l, messageID: messageID, from: after, pos: min(after, last)}
	c.attach()
	return c
}

// attach reads from memory from now on if the message is produced here and its in-memory
// window reaches back to the cursor's position.
func (c *Cursor) attach() {
	if s := c.log.lookup(c.messageID); s != nil {
		s.mu.Lock()
		ok := s.base <= c.pos && !s.lost
		s.mu.Unlock()
		if ok {
			c.live = s
		}
	}
}

// Position is the seq of the last event the cursor delivered (or its starting point).
func (c *Cursor) Position() int64 { return max(c.pos, c.from) }

// Ended reports whether the cursor has read the terminal event.
func (c *Cursor) Ended() bool { return c.ended }

// Next returns the events available now after the cursor, in order, and a channel that is
// closed when more may be available. It does not block: the caller waits on the channel
// together with its own timers (heartbeats) and its context. A database error is returned
// with a channel that fires after the poll interval, so the caller may simply wait and
// call again (the database may be restarting).
func (c *Cursor) Next(ctx context.Context) ([]store.Event, <-chan struct{}, error) {
	return c.next(ctx, nil)
}

// NextFunc is Next for a caller that waits without a goroutine of its own: instead of
// waiting on a channel, it has wake called once when more may be available, from the
// committer, a timer or a notification (so wake must not block), possibly before NextFunc
// returns. A wake already waiting is not armed again, so a caller that calls NextFunc
// again before it was woken (to send a heartbeat, say) is still woken once.
func (c *Cursor) NextFunc(ctx context.Context, wake func()) ([]store.Event, error) {
	evs, _, err := c.next(ctx, wake)
	return evs, err
}

// next is Next, and arms wake for the change its channel waits for when wake is not nil.
func (c *Cursor) next(ctx context.Context, wake func()) ([]store.Event, <-chan struct{}, error) {
	if c.live != nil {
		evs, changed, lost := c.live.committedAfter(c.pos, wake, &c.armedLive)
		if len(evs) > 0 || !lost {
			return c.advance(evs), changed, nil
		}
		c.live = nil // lost to another replica: the rest of its log is in the database
	} else {
		c.attach()
		if c.live != nil {
			return c.next(ctx, wake)
		}
	}
	wait := c.log.waker.wait(c.messageID, c.log.tune.pollInterval, wake, &c.armedDB)
	c.watch(ctx)
	evs, err := c.log.store.ListEvents(ctx, c.messageID, c.pos, pageSize)
	if err != nil {
		return nil, wait, fmt.Errorf("eventlog: read message %s after %d: %w", c.messageID, c.pos, err)
	}
	if len(evs) == pageSize { // the next page is there already
		wait = closedChan()
		if wake != nil {
			wake()
		}
	}
	return c.advance(evs), wait, nil
}

// watch has the commits of a message that another replica writes notify this one
// (store.Watch), once per cursor, before its first read from the database: a commit after
// the watch notifies, and the read sees those before it. A message produced here wakes its
// cursors itself. A watch that fails leaves the cursor to the poll, and is tried again at
// its next read.
func (c *Cursor) watch(ctx context.Context) {
	if c.watched || c.ended || c.producedHere() {
		return
	}
	c.watched = c.log.store.Watch(ctx, c.messageID) == nil
}

// advance moves the cursor over evs and returns those the client has not seen.
func (c *Cursor) advance(evs []store.Event) []store.Event {
	skip := 0
	for i, ev := range evs {
		c.pos = ev.Seq
		if isTerminal(ev) {
			c.ended = true
		}
		if ev.Seq <= c.from {
			skip = i + 1
		}
	}
	return evs[skip:]
}

func closedChan() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// producedHere reports whether this process writes the message (and has not lost it).
func (c *Cursor) producedHere() bool {
	s := c.log.lookup(c.messageID)
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.lost
}
