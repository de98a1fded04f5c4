// Package router spreads chat turns over several upstream endpoints and fails over
// between them before anything irreversible has reached the client.
//
// [Router] has the same Stream method as the wire clients, so the stream handler cannot
// tell it from one. Endpoints are tried by priority (lower first; equal priorities take
// turns, so they share the load). Before the endpoint has sent anything the client will
// keep, a connect error, a 429 (waiting at least its Retry-After, up to a cap, before the
// same endpoint is tried again), a 5xx or a time-out before the first byte moves the turn
// to the next endpoint, and, once every endpoint has been tried, starts another pass, in
// which each endpoint is tried again after a jittered back-off of its own (or its
// Retry-After, when longer), within the attempt limit and the turn's deadline.
//
// "Irreversible" is the first content delta or tool-call event: EventCreated is held back
// until the event after it, so a failing endpoint is never announced, and from then on the
// endpoint's error ends the turn as it would without a router. Every event passed on is
// stamped with the endpoint's id and provider, so status: routed names the endpoint that
// answered.
//
// Each endpoint has a circuit breaker: after a number of unhealthy answers in a row it is
// skipped while another endpoint is available, and probed again after a cool-down
// ([Router.EndpointStates] shows the states). When every breaker is open the endpoints are
// tried anyway, so a single endpoint is never locked out by its own breaker.
package router

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/phaseflow/phaseflow/upstream"
)

// Streamer is one endpoint's wire client: [upstream.Client] or [upstream.ChatClient].
type Streamer interface {
	Stream(ctx context.Context, req upstream.Request) iter.Seq2[upstream.Event, error]
}

// Endpoint is one upstream the router may send a turn to.
type Endpoint struct {
	// ID names the endpoint in status: routed, completed and the logs.
	ID int
	// Provider is reported with the endpoint's events (see [upstream.DetectProvider]).
	Provider string
	// Model replaces the request's model for this endpoint when set.
	Model string
	// Priority orders the endpoints: lower first, equal ones share the load.
	Priority int
	// JSONMode is how a request for one JSON object is sent to this endpoint:
	// [upstream.JSONModeStructured] or [upstream.JSONModeTextJSON] (see
	// [upstream.ResolveJSONMode]); empty counts as text_json.
	JSONMode string
	// Client streams from the endpoint.
	Client Streamer
}

// The defaults of [Options].
const (
	DefaultMaxAttempts      = 4
	DefaultFirstByteTimeout = 30 * time.Second
	DefaultRetryAfterCap    = 10 * time.Second
	DefaultBreakerFailures  = 3
	DefaultBreakerCooldown  = 30 * time.Second
	defaultBackoffBase      = 250 * time.Millisecond
	defaultBackoffMax       = 5 * time.Second
)

// Options tune a [Router]. Zero values pick the defaults.
type Options struct {
	// MaxAttempts bounds the requests one turn may make over all endpoints.
	MaxAttempts int
	// FirstByteTimeout bounds the wait for an endpoint's first event.
	FirstByteTimeout time.Duration
	// RetryAfterCap bounds the Retry-After wait honoured before the same endpoint is
	// tried again.
	RetryAfterCap time.Duration
	// BreakerFailures is how many unhealthy answers in a row open an endpoint's breaker.
	BreakerFailures int
	// BreakerCooldown is how long an open breaker skips its endpoint before a probe.
	BreakerCooldown time.Duration
	// Logger receives a line per failed attempt; nil discards.
	Logger *slog.Logger
	// Observe, when set, is told of every request sent to an endpoint once it ends
	// (metrics).
	Observe func(Request)
}

// Request is one request sent to an endpoint, as [Options.Observe] is told of it.
type Request struct {
	EndpointID int
	// Outcome is "ok", "cancelled" (the turn ended it) or the failure's kind
	// (rate_limited, unavailable, timeout, provider).
	Outcome string
	// FirstByte is the time to the endpoint's first event (0: none came); Total the
	// request's whole time.
	FirstByte, Total time.Duration
}

// endpoint is an Endpoint with its breaker.
type endpoint struct {
	Endpoint
	br *breaker
}

// Router sends each turn to one of several endpoints. It is safe for concurrent use;
// create it with [New].
type Router struct {
	eps  []*endpoint // sorted by priority
	opts Options
	log  *slog.Logger
	next atomic.Uint64 // rotates equal priorities
}

// New returns a router over endpoints. It fails when there are none or two share an id.
func New(endpoints []Endpoint, opts Options) (*Router, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("router: no endpoint")
	}
	opts = withDefaults(opts)
	r := &Router{opts: opts, log: opts.Logger}
	seen := map[int]bool{}
	for _, e := range endpoints {
		if seen[e.ID] {
			return nil, fmt.Errorf("router: endpoint id %d used twice", e.ID)
		}
		seen[e.ID] = true
		r.eps = append(r.eps, &endpoint{Endpoint: e, br: newBreaker(opts.BreakerFailures, opts.BreakerCooldown)})
	}
	slices.SortStableFunc(r.eps, func(a, b *endpoint) int { return cmp.Compare(a.Priority, b.Priority) })
	return r, nil
}

// withDefaults fills the zero fields of o.
func withDefaults(o Options) Options {
	o.MaxAttempts = cmp.Or(max(o.MaxAttempts, 0), DefaultMaxAttempts)
	o.FirstByteTimeout = cmp.Or(max(o.FirstByteTimeout, 0), DefaultFirstByteTimeout)
	o.RetryAfterCap = cmp.Or(max(o.RetryAfterCap, 0), DefaultRetryAfterCap)
	o.BreakerFailures = cmp.Or(max(o.BreakerFailures, 0), DefaultBreakerFailures)
	o.BreakerCooldown = cmp.Or(max(o.BreakerCooldown, 0), DefaultBreakerCooldown)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// EndpointState is one endpoint's breaker as [Router.EndpointStates] reports it.
type EndpointState struct {
	ID       int
	Provider string
	Model    string
	Priority int
	// State is StateClosed, StateOpen or StateHalfOpen.
	State string
	// ConsecutiveFailures counts the unhealthy answers since the last healthy one.
	ConsecutiveFailures int
	// OpenUntil is when an open breaker lets a probe through; zero otherwise.
	OpenUntil time.Time
}

// EndpointStates returns every endpoint's breaker, in priority order, for /metrics.
func (r *Router) EndpointStates() []EndpointState {
	out := make([]EndpointState, len(r.eps))
	for i, e := range r.eps {
		st, n, until := e.br.snapshot()
		if st != StateOpen {
			until = time.Time{}
		}
		out[i] = EndpointState{ID: e.ID, Provider: e.Provider, Model: e.Model, Priority: e.Priority, State: st, ConsecutiveFailures: n, OpenUntil: until}
	}
	return out
}

// order is this turn's order of endpoints: by priority, each group of equal priority
// rotated by one more step than for the previous turn.
func (r *Router) order() []*endpoint {
	n := r.next.Add(1) - 1
	out := make([]*endpoint, 0, len(r.eps))
	for i := 0; i < len(r.eps); {
		j := i
		for j < len(r.eps) && r.eps[j].Priority == r.eps[i].Priority {
			j++
		}
		group := r.eps[i:j]
		k := int(n % uint64(len(group)))
		out = append(out, group[k:]...)
		out = append(out, group[:k]...)
		i = j
	}
	return out
}
