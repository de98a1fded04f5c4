package eventlog

import (
	"sync"
	"time"
)

// waker lets cursors that read a message from the database wait for news of it: a
// notification from another replica wakes them at once, and a poll timer wakes them anyway
// so that a lost notification only costs latency. Cursors of one message share one wait:
// a channel, and the wakes of cursors that wait without a goroutine (Cursor.NextFunc).
type waker struct {
	mu      sync.Mutex
	waiting map[string]*wait
}

// wait is the next wake of one message.
type wait struct {
	ch    chan struct{}
	wakes []func()
}

func newWaker() *waker { return &waker{waiting: make(map[string]*wait)} }

// wait returns the channel closed on the next wake of id or after poll, whichever is first.
// A wake (Cursor.NextFunc) is also called then, unless armed says it already waits for that
// wake; armed is set to the wait it waits for.
func (w *waker) wait(id string, poll time.Duration, wake func(), armed **wait) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt := w.next(id, poll)
	if wake != nil && *armed != wt {
		wt.wakes = append(wt.wakes, wake)
		*armed = wt
	}
	return wt.ch
}

// next is id's next wake, started if need be; w.mu is held.
func (w *waker) next(id string, poll time.Duration) *wait {
	wt, ok := w.waiting[id]
	if !ok {
		wt = &wait{ch: make(chan struct{})}
		w.waiting[id] = wt
		time.AfterFunc(poll, func() { w.fire(id, wt) })
	}
	return wt
}

// wake wakes the cursors of id, or of every message when id is empty.
func (w *waker) wake(id string) {
	w.mu.Lock()
	var woken []*wait
	if id == "" {
		for k, wt := range w.waiting {
			woken = append(woken, wt)
			delete(w.waiting, k)
		}
	} else if wt, ok := w.waiting[id]; ok {
		woken = append(woken, wt)
		delete(w.waiting, id)
	}
	w.mu.Unlock()
	for _, wt := range woken {
		wt.done()
	}
}

func (w *waker) fire(id string, wt *wait) {
	w.mu.Lock()
	mine := w.waiting[id] == wt
	if mine {
		delete(w.waiting, id)
	}
	w.mu.Unlock()
	if mine {
		wt.done()
	}
}

// done wakes the wait's cursors; it is no longer in the waker's map, so nobody else can.
func (wt *wait) done() {
	close(wt.ch)
	callAll(wt.wakes)
}
