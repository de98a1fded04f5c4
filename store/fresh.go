package store

import (
	"sync"
	"time"
)

// freshSessions remembers, on PostgreSQL, the sessions this replica created that have not
// had a turn yet, as a turn's read would find them, so that ReadTurn answers a session's
// first turn without its round trip: a client that creates a session and posts its first
// message at once, the usual way to start a conversation, starts its turn one round trip
// sooner. The database still decides: the turn's write (writeGuessedPGQuery) checks what the
// read would have found and this guess assumed, and a guess it does not confirm (the
// session changed on another replica, an administrator activated a prompt) writes nothing
// and is answered ErrSessionChanged, as after a lost race, and the turn is read again.
// Measured with loadbench, answering without the read lifted PostgreSQL's turns/s at c=16
// and its added time to first delta by well over the bar a mechanism must clear.
//
// Its size is bounded: a session is forgotten at its first turn or after freshTTL, and
// when freshMax are remembered (after dropping the expired), a new one is not.
type freshSessions struct {
	mu       sync.Mutex
	sessions map[string]freshSession
	// prompts is, per locale, whether the last read found a stored prompt active: the guess
	// of a new session's Seen.Prompts, which only prompts (rare) change.
	prompts map[string]bool
}

// freshSession is one remembered session and when it was created.
type freshSession struct {
	sess Session
	at   time.Time
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
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sessions) >= freshMax {
		for id, e := range f.sessions {
			if at.Sub(e.at) > freshTTL {
				delete(f.sessions, id)
			}
		}
		if len(f.sessions) >= freshMax {
			return
		}
	}
	row := *sess
	row.utc()
	f.sessions[sess.ID] = freshSession{sess: row, at: at}
}

// take returns, and forgets, the read a turn of userID in session id would make, when this
// replica created the session for that user less than freshTTL ago: no history, no
// strategy, no conflicts, and the stored prompts of its locale as the last read found them.
func (f *freshSessions) take(id, userID string, now time.Time) (*TurnSession, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.sessions[id]
	if !ok {
		return nil, false
	}
	delete(f.sessions, id)
	if e.sess.UserID != userID || now.Sub(e.at) > freshTTL {
		return nil, false
	}
	return &TurnSession{Session: e.sess, Seen: Seen{Prompts: f.prompts[e.sess.Locale]}, guessed: true}, true
}

// read learns from a turn's read whether its locale has a stored prompt active.
func (f *freshSessions) read(ts *TurnSession) {
	f.mu.Lock()
	f.prompts[ts.Locale] = ts.Prompts
	f.mu.Unlock()
}
