package userlimit

import (
	"context"
	"log/slog"
	"time"
)

// RateStore keeps every user's message allowance where every replica reads it (package
// store), so N replicas allow a user what one does.
type RateStore interface {
	TakeMessage(ctx context.Context, userID string, now time.Time, interval, tolerance time.Duration) (bool, time.Duration, error)
	GiveMessage(ctx context.Context, userID string, interval time.Duration) error
}

// Rate caps how fast each user posts messages: burst at once, refilled at perMinute (a
// generic cell rate, the token bucket's equivalent, kept as one row per user in the
// database). It is safe for concurrent use.
type Rate struct {
	store     RateStore
	interval  time.Duration // between two messages, on average
	tolerance time.Duration // how far ahead of that a burst may run
	logger    *slog.Logger
	now       func() time.Time
}

// NewRate allows each user perMinute messages a minute on average and burst at once.
func NewRate(st RateStore, perMinute float64, burst int, logger *slog.Logger) *Rate {
	interval := time.Duration(float64(time.Minute) / perMinute)
	return &Rate{store: st, interval: interval, tolerance: interval * time.Duration(max(burst, 1)-1), logger: logger, now: time.Now}
}

// Allow takes one message from userID's allowance. When it is used up it takes nothing
// and returns false with how long until a message would be allowed (for Retry-After).
// Undo, on an allowed message, gives it back: a post refused for another reason (too many
// turns running, a bad body) does not use up the allowance. A database that cannot be
// reached lets the message through (logged): the post then fails on its own turn's
// writes, with the error that says why.
func (r *Rate) Allow(ctx context.Context, userID string) (ok bool, retry time.Duration, undo func()) {
	ok, retry, err := r.store.TakeMessage(ctx, userID, r.now(), r.interval, r.tolerance)
	if err != nil {
		r.logger.Warn("message rate unchecked: the database did not answer", "user_id", userID, "err", err)
		return true, 0, func() {}
	}
	if !ok {
		return false, retry, nil
	}
	return true, 0, func() {
		if err := r.store.GiveMessage(context.WithoutCancel(ctx), userID, r.interval); err != nil {
			r.logger.Warn("give a refused post's message back", "user_id", userID, "err", err)
		}
	}
}
