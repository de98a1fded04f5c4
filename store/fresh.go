package store

import (
	"sync"
	"time"
)

// freshSessions remembers, on PostgreSQL, the sessions this replica created that have not
// had a turn yet, as the begin's read would find them. A session's first turn then starts
// on that guess (its plan and its upstream call) at once, and is written without the read
// by a statement that checks in the database what the read would have found (writeGuess):
// the read's round trip leaves the begin. The database still decides. A guess it does not
// confirm (the session changed on another replica, a turn or a strategy was stored for it
// there, an administrator activated a prompt) writes nothing and is dropped with the turn
// started on it, whose upstream request is cancelled before its answer, and the turn starts
// again on the read, as after a lost race. A client that creates a session and posts its
// first message at once, the usual way to start a conversation, is what this serves; a
// message that starts its own session is guessed the same way (beginInTx).
//
// Its size is bounded: a session is forgotten at its first turn, at a write of this
// replica that changes it, or after freshTTL (dropped when the map is full); when freshMax
// are still remembered, a new session is not.
type freshSessions struct {
	mu       sync.Mutex
	sessions map[string]freshSession
	// prompts is, per locale, whether the last begin read found a stored prompt active:
	// the guess of a new session's Seen.Prompts, which only prompts (rare) change.
	prompts map[string]bool
}

// freshSession is one remembered session and when it was created.
type freshSession struct {
	row lockedSession
	at  time.Time
}

const (
	freshTTL = time.Minute
	freshMax = 4096
)

func newFreshSessions() *freshSessions {
	return &freshSessions{sessions: make(map[string]freshSession), prompts: make(map[string]bool)}
}

// put remembers sess, just inserted.
func (f *freshSessions) put(sess *Session, at time.Time) {
	row := f.created(sess)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sessions) >= freshMax {
		f.expire(at)
		if len(f.sessions) >= freshMax {
			return
		}
	}
	f.sessions[sess.ID] = freshSession{row: *row, at: at}
}

// created is the guess of the begin's read of sess, as inserted: no messages, no strategy,
// no conflicts, and the stored prompts of its locale as the last read found them.
func (f *freshSessions) created(sess *Session) *lockedSession {
	f.mu.Lock()
	prompts := f.prompts[sess.Locale]
	f.mu.Unlock()
	row := &lockedSession{Session: *sess, Seen: Seen{Prompts: prompts}}
	row.utc()
	return row
}

// expire forgets the sessions remembered longer than freshTTL; f.mu is held.
func (f *freshSessions) expire(now time.Time) {
	for id, e := range f.sessions {
		if now.Sub(e.at) > freshTTL {
			delete(f.sessions, id)
		}
	}
}

// take returns, and forgets, the guess for session id when it is userID's and still fresh.
func (f *freshSessions) take(id, userID string, now time.Time) (*lockedSession, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.sessions[id]
	if !ok {
		return nil, false
	}
	delete(f.sessions, id)
	if e.row.UserID != userID || now.Sub(e.at) > freshTTL {
		return nil, false
	}
	return &e.row, true
}

// drop forgets session id: this replica wrote it.
func (f *freshSessions) drop(id string) {
	f.mu.Lock()
	delete(f.sessions, id)
	f.mu.Unlock()
}

// read learns from a begin's read whether its locale has a stored prompt active.
func (f *freshSessions) read(row *lockedSession) {
	f.mu.Lock()
	f.prompts[row.Locale] = row.Prompts
	f.mu.Unlock()
}
