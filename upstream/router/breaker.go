package router

import (
	"sync"
	"time"
)

// The states of an endpoint's circuit breaker, as [Router.EndpointStates] reports them.
const (
	// StateClosed: requests go to the endpoint.
	StateClosed = "closed"
	// StateOpen: the endpoint failed too often in a row and is skipped while another
	// endpoint is available, until its cool-down has passed.
	StateOpen = "open"
	// StateHalfOpen: the cool-down has passed; one request (the probe) may try the
	// endpoint, and its outcome closes or reopens the breaker.
	StateHalfOpen = "half_open"
)

// breaker is one endpoint's circuit breaker. Only failures that say the endpoint is
// unhealthy count (connect errors, 429, 5xx, time-outs); an answer of any kind, even a
// refusal, is a sign of life.
type breaker struct {
	threshold int
	cooldown  time.Duration

	mu        sync.Mutex
	state     string
	failures  int // in a row
	openUntil time.Time
	probing   bool // a half-open probe is in flight
}

func newBreaker(threshold int, cooldown time.Duration) *breaker {
	return &breaker{threshold: threshold, cooldown: cooldown, state: StateClosed}
}

// allow reports whether a request may go to the endpoint now. An open breaker whose
// cool-down has passed turns half-open and lets exactly one probe through.
func (b *breaker) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case StateOpen:
		if now.Before(b.openUntil) {
			return false
		}
		b.state = StateHalfOpen
	case StateClosed:
		return true
	}
	if b.probing {
		return false
	}
	b.probing = true
	return true
}

// success closes the breaker.
func (b *breaker) success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.failures, b.probing = StateClosed, 0, false
}

// failure counts an unhealthy answer; the threshold-th in a row, or a failed probe, opens
// the breaker for the cool-down.
func (b *breaker) failure(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	if b.state == StateHalfOpen || b.state == StateOpen || b.failures >= b.threshold {
		b.state, b.openUntil = StateOpen, now.Add(b.cooldown)
	}
	b.probing = false
}

// release ends a probe that said nothing about the endpoint's health (the turn was
// cancelled, or the endpoint refused the request itself), so the next request may probe.
func (b *breaker) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
}

// snapshot returns the state, the failures in a row and when an open breaker allows a
// probe.
func (b *breaker) snapshot() (state string, failures int, openUntil time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.failures, b.openUntil
}
