package userlimit

import (
	"errors"
	"sync"
)

// ErrTooManyTurns means the user already runs as many generations as allowed (HTTP 429).
var ErrTooManyTurns = errors.New("userlimit: too many generations running for this user")

// Turns counts the generations each user runs on this replica; those running on other
// replicas are counted by the caller (the database knows them) and passed to Acquire. A
// user's entry exists only while they run one here, so the map never holds more entries
// than there are generations running, which the orchestrator's global limit bounds. It is
// safe for concurrent use.
type Turns struct {
	max     int
	mu      sync.Mutex
	running map[string]int
}

// NewTurns allows each user perUser generations at once (at least 1).
func NewTurns(perUser int) *Turns {
	return &Turns{max: max(perUser, 1), running: make(map[string]int)}
}

// Acquire counts one more generation for userID, who runs elsewhere more on other
// replicas, or returns ErrTooManyTurns and counts nothing. Every nil return must be paired
// with one Release.
func (t *Turns) Acquire(userID string, elsewhere int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running[userID]+elsewhere >= t.max {
		return ErrTooManyTurns
	}
	t.running[userID]++
	return nil
}

// Release gives back one generation of userID.
func (t *Turns) Release(userID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.running[userID]; n > 1 {
		t.running[userID] = n - 1
	} else {
		delete(t.running, userID)
	}
}

// Running reports how many generations userID runs (for tests and metrics).
func (t *Turns) Running(userID string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running[userID]
}
