package store

import (
	"context"
	"time"
)

// Backoff between attempts of WhileUnavailable.
const (
	retryMin = 50 * time.Millisecond
	retryMax = time.Second
)

// WhileUnavailable runs fn until it succeeds, fails for a reason other than an unreachable
// database (see [IsUnavailable]), or ctx ends, and returns fn's last error. A running turn
// calls its database work through it, so it waits out a database restart instead of
// failing; the orchestrator ends the turn's context once the outage outlasts its grace.
func WhileUnavailable(ctx context.Context, fn func() error) error {
	delay := retryMin
	for {
		err := fn()
		if err == nil || !IsUnavailable(err) {
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
		delay = min(2*delay, retryMax)
	}
}
