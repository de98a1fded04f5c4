package eventlog

import (
	"sync"
	"time"
)

// waker lets cursors that read a message from the database wait for news of it: a
// notification from another replica wakes them at once, and a poll timer wakes them anyway
// so that a lost notification only costs latency. Cursors of one message share one channel,
// so memory grows with the number of waited-on messages, not with clients.
type waker struct {
	mu      sync.Mutex
	waiting map[string]chan struct{}
}

func newWaker() *waker { return &waker{waiting: make(map[string]chan struct{})} }

// wait returns the channel closed on the next wake of id or after poll, whichever is first.
func (w *waker) wait(id string, poll time.Duration) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.waiting[id]
	if !ok {
		ch = make(chan struct{})
		w.waiting[id] = ch
		time.AfterFunc(poll, func() { w.fire(id, ch) })
	}
	return ch
}

// wake wakes the cursors of id, or of every message when id is empty.
func (w *waker) wake(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if id == "" {
		for k, ch := range w.waiting {
			close(ch)
			delete(w.waiting, k)
		}
		return
	}
	if ch, ok := w.waiting[id]; ok {
		close(ch)
		delete(w.waiting, id)
	}
}

func (w *waker) fire(id string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting[id] == ch {
		close(ch)
		delete(w.waiting, id)
	}
}
