package api

import (
	"testing"
	"time"
)

// parked is a stream the wheel can signal without starting it: it reads as running, so
// what is due only collects in its pending set.
func parked() *eventStream { return &eventStream{running: true} }

func pending(es *eventStream) signal {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.pending
}

// waitFor polls until es has sig pending, and says when that was.
func waitFor(t *testing.T, es *eventStream, sig signal) time.Time {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); pending(es)&sig == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("signal %b not due within 5 s", sig)
		}
	}
	return time.Now()
}

// A stream's heartbeat is due one interval after it joined, a tick early at most, and again
// one interval later; streams of other slots are not due with it.
func TestWheelBeatsEachStreamOncePerInterval(t *testing.T) {
	const interval = 200 * time.Millisecond
	w := newBeatWheel(interval)
	first, joined := parked(), time.Now()
	if !w.join(first) {
		t.Fatal("join refused")
	}
	time.Sleep(interval / 2)
	second := parked()
	w.join(second)
	due := waitFor(t, first, sigBeat)
	if got := due.Sub(joined); got < interval-w.tick {
		t.Errorf("first heartbeat due %v after joining, want about %v", got, interval)
	}
	if pending(second) != 0 {
		t.Error("a stream that joined half an interval later is due at the same time")
	}
	first.mu.Lock()
	first.pending = 0
	first.mu.Unlock()
	again := waitFor(t, first, sigBeat)
	if got := again.Sub(due); got < interval-2*w.tick || got > 3*interval {
		t.Errorf("next heartbeat %v after the last, want about %v", got, interval)
	}
	w.leave(first)
	w.leave(second)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.count != 0 || w.timer != nil {
		t.Errorf("an empty wheel keeps %d streams and its timer (%v)", w.count, w.timer != nil)
	}
}

// The end of streams reaches every stream in the wheel, and none joins after it.
func TestWheelEnd(t *testing.T) {
	w := newBeatWheel(time.Hour)
	var in []*eventStream
	for range 5 {
		es := parked()
		w.join(es)
		in = append(in, es)
	}
	w.end()
	for _, es := range in {
		if pending(es)&sigEnd == 0 {
			t.Fatal("a stream in the wheel was not told of the end")
		}
	}
	if w.join(parked()) {
		t.Error("a stream joined a wheel that ended")
	}
}

// Slots: fine for long intervals, never finer than minWheelTick for short ones.
func TestWheelSlots(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		slots    int
	}{
		{15 * time.Second, maxWheelSlots},
		{100 * time.Millisecond, 10},
		{5 * time.Millisecond, 1},
	} {
		w := newBeatWheel(tc.interval)
		if len(w.slots) != tc.slots || time.Duration(len(w.slots))*w.tick != tc.interval {
			t.Errorf("interval %v: %d slots of %v, want %d covering it", tc.interval, len(w.slots), w.tick, tc.slots)
		}
	}
}
