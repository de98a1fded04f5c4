package api

import (
	"sync"
	"time"
)

// beatWheel keeps the detached streams (waiting.go) for their heartbeats and for the
// server's end of streams. Its slots cover one heartbeat interval and its hand moves a slot
// at a time; a stream stays in the slot it joined until it ends, and each time the hand
// reaches that slot, one interval after the last time, the stream's heartbeat is due.
//
// A timer and a context registration of each stream's own cost more than half of what an
// idle follower holds; the wheel costs a stream a map entry, and its one timer runs only
// while it has streams. The slots are fine enough that the streams due at once are a small
// share of those held: each due stream sends on a goroutine of its own, and a burst of them
// would be a burst of stacks.
type beatWheel struct {
	mu    sync.Mutex
	slots []map[*eventStream]struct{}
	hand  int
	tick  time.Duration
	timer *time.Timer // nil while the wheel is empty
	count int         // streams in the wheel
	run   int         // counts the timer's starts: a turn of a stopped run does nothing
	ended bool        // the server ended its streams: none may join
}

// Slot sizes: at least minWheelTick (short intervals of tests and demos need no finer
// beats), at most a maxWheelSlots-th of the interval.
const (
	minWheelTick  = 10 * time.Millisecond
	maxWheelSlots = 128
)

// newBeatWheel returns the wheel for heartbeats every interval.
func newBeatWheel(interval time.Duration) *beatWheel {
	tick := max(interval/maxWheelSlots, minWheelTick)
	n := max(int(interval/tick), 1)
	return &beatWheel{slots: make([]map[*eventStream]struct{}, n), tick: interval / time.Duration(n)}
}

// join adds es to the slot the hand has just passed, so its first heartbeat is due one
// interval from now (a tick early at most); false means the server has ended its streams.
func (w *beatWheel) join(es *eventStream) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	slot := w.slots[w.hand]
	if slot == nil {
		slot = make(map[*eventStream]struct{})
		w.slots[w.hand] = slot
	}
	slot[es] = struct{}{}
	es.slot = w.hand
	w.count++
	if w.timer == nil {
		w.run++
		run := w.run
		w.timer = time.AfterFunc(w.tick, func() { w.turn(run) })
	}
	return true
}

// leave removes es, which joined; the timer stops with the last stream.
func (w *beatWheel) leave(es *eventStream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.slots[es.slot][es]; !ok {
		return
	}
	delete(w.slots[es.slot], es)
	w.count--
	if w.count == 0 && w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// turn moves the hand a slot and tells the streams of that slot that a heartbeat is due;
// each sends it on a goroutine of its own, so a slow client holds up no other.
func (w *beatWheel) turn(run int) {
	w.mu.Lock()
	if w.timer == nil || run != w.run { // the wheel emptied or ended after the timer fired
		w.mu.Unlock()
		return
	}
	w.hand = (w.hand + 1) % len(w.slots)
	due := make([]*eventStream, 0, len(w.slots[w.hand]))
	for es := range w.slots[w.hand] {
		due = append(due, es)
	}
	w.timer.Reset(w.tick)
	w.mu.Unlock()
	for _, es := range due {
		es.signal(sigBeat, false)
	}
}

// end stops the wheel for good and tells every stream in it that the server ends its
// streams; the streams leave as they end.
func (w *beatWheel) end() {
	w.mu.Lock()
	w.ended = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	var all []*eventStream
	for _, slot := range w.slots {
		for es := range slot {
			all = append(all, es)
		}
	}
	w.mu.Unlock()
	for _, es := range all {
		es.signal(sigEnd, false)
	}
}
