// Package admission holds the limits a turn must pass before it begins: the server's
// bound on concurrent turns and each user's. A turn holds one slot of each from its
// admission until it frees them, just before its terminal event, so a client that sees the
// end and posts again finds them free.
package admission

import (
	"context"
	"errors"
	"fmt"
)

// ErrOverCapacity means the server's concurrent-turn limit is reached (503 with
// Retry-After).
var ErrOverCapacity = errors.New("orchestration: too many turns running")

// Users bounds the generations one user runs at once (package userlimit).
type Users interface {
	// Acquire takes one of userID's slots, counting elsewhere generations the user runs
	// on other replicas, or returns an error (answered 429) and takes nothing.
	Acquire(userID string, elsewhere int) error
	// Release gives back one of userID's slots.
	Release(userID string)
}

// Limits are the server's slots and the users' bound.
type Limits struct {
	slots   chan struct{}
	users   Users
	perUser bool // users is a real bound, not unbounded
}

// New returns limits of max concurrent turns, and users' bound (nil for none).
func New(max int, users Users) *Limits {
	l := &Limits{slots: make(chan struct{}, max), users: users, perUser: users != nil}
	if users == nil {
		l.users = unbounded{}
	}
	return l
}

// Elsewhere is what the user runs on other replicas, as count reads it (the database),
// for Acquire; 0 without asking when there is no per-user bound. It is read before the
// slots are taken, so two posts racing on two replicas may both pass.
func (l *Limits) Elsewhere(ctx context.Context, userID string, count func(context.Context) (int, error)) (int, error) {
	if !l.perUser {
		return 0, nil
	}
	n, err := count(ctx)
	if err != nil {
		return 0, fmt.Errorf("admission: %s's generations on other replicas: %w", userID, err)
	}
	return n, nil
}

// Acquire takes a server slot and one of userID's, who runs elsewhere generations on other
// replicas. The server's is checked first, so a full server answers 503 whoever asks.
func (l *Limits) Acquire(userID string, elsewhere int) error {
	select {
	case l.slots <- struct{}{}:
	default:
		return ErrOverCapacity
	}
	if err := l.users.Acquire(userID, elsewhere); err != nil {
		<-l.slots
		return err
	}
	return nil
}

// Release gives back what Acquire took.
func (l *Limits) Release(userID string) {
	l.users.Release(userID)
	<-l.slots
}

// unbounded is the Users of a server without a per-user bound.
type unbounded struct{}

func (unbounded) Acquire(string, int) error { return nil }
func (unbounded) Release(string)            {}
