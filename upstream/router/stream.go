package router

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/phaseflow/phaseflow/upstream"
)

// errFirstByte is the cause of an attempt cut because its endpoint sent nothing in time.
var errFirstByte = errors.New("router: no first byte in time")

// outcome is how one attempt ended.
type outcome int

const (
	finished outcome = iota // the stream ended (completed, or the consumer stopped)
	failedOn                // failed before anything irreversible: another attempt may follow
	ended                   // failed for good: the error must be yielded
)

// Stream sends req to the endpoints in turn until one answers, with the contract of
// [upstream.Client.Stream]: events, then EventCompleted or exactly one error (ctx.Err()
// itself when ctx ended). When every attempt failed before the stream, the error is the
// last attempt's.
//
// Unlike the client's, the sequence is single-use: once an endpoint has answered, no
// other attempt can follow, so the router lets req go rather than hold the prompt for the
// rest of the stream. A second iteration yields [ErrReused].
func (r *Router) Stream(ctx context.Context, req upstream.Request) iter.Seq2[upstream.Event, error] {
	used := false
	return func(yield func(upstream.Event, error) bool) {
		if used {
			yield(upstream.Event{}, ErrReused)
			return
		}
		used = true
		if err := r.stream(ctx, &req, yield); err != nil {
			yield(upstream.Event{}, err)
		}
	}
}

// ErrReused is yielded by a second iteration of a [Router.Stream] sequence.
var ErrReused = errors.New("router: a stream's sequence is iterated once")

// turn is the failover state of one Stream call.
type turn struct {
	order      []*endpoint
	retryAfter map[int]time.Time // endpoint id → not before, from its 429
	attempts   int
	last       error
}

// stream runs the attempts; it returns the error to yield, nil when done.
func (r *Router) stream(ctx context.Context, req *upstream.Request, yield func(upstream.Event, error) bool) error {
	t := &turn{order: r.order(), retryAfter: map[int]time.Time{}}
	for pass := 0; t.attempts < r.opts.MaxAttempts; pass++ {
		tried := false
		for _, ep := range t.order {
			if t.attempts >= r.opts.MaxAttempts {
				break
			}
			if !ep.br.allow(time.Now()) {
				continue
			}
			tried = true
			if done, err := r.attempt(ctx, t, ep, pass, req, yield); done {
				return err
			}
		}
		if !tried { // every breaker is open: try them anyway rather than refuse the turn
			for _, ep := range t.order {
				if t.attempts >= r.opts.MaxAttempts {
					break
				}
				if done, err := r.attempt(ctx, t, ep, pass, req, yield); done {
					return err
				}
			}
		}
	}
	return t.last
}

// attempt waits when the endpoint is being tried again, then tries it. done reports that
// the turn is over, with err the error to yield (nil when the stream finished).
func (r *Router) attempt(ctx context.Context, t *turn, ep *endpoint, pass int, req *upstream.Request, yield func(upstream.Event, error) bool) (done bool, err error) {
	if pass > 0 {
		if err := r.wait(ctx, r.delay(t, ep, pass)); err != nil {
			ep.br.release()
			if ctx.Err() != nil {
				return true, ctx.Err()
			}
			return true, t.last
		}
	}
	t.attempts++
	out, err := r.try(ctx, ep, req, yield)
	switch out {
	case finished:
		return true, nil
	case ended:
		return true, err
	}
	t.last = err
	var ue *upstream.Error
	if errors.As(err, &ue) && ue.RetryAfter > 0 {
		t.retryAfter[ep.ID] = time.Now().Add(min(ue.RetryAfter, r.opts.RetryAfterCap))
	}
	r.log.Warn("upstream endpoint failed before the stream", "endpoint_id", ep.ID, "provider", ep.Provider,
		"attempt", t.attempts, "max_attempts", r.opts.MaxAttempts, "err", err)
	return false, nil
}

// delay is the wait before trying ep again on a later pass: a jittered exponential
// back-off, or the endpoint's Retry-After when that is longer.
func (r *Router) delay(t *turn, ep *endpoint, pass int) time.Duration {
	d := min(defaultBackoffBase<<(pass-1), defaultBackoffMax)
	d = d/2 + rand.N(d/2+1)
	if until, ok := t.retryAfter[ep.ID]; ok {
		d = max(d, time.Until(until))
	}
	return d
}

// wait sleeps d unless ctx ends first or its deadline leaves no time for d.
func (r *Router) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.DeadlineExceeded
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// try runs one attempt on ep. EventCreated is held back until the next event; once any
// other event has been passed on, the attempt is committed, its failure ends the turn, and
// *req is cleared: no attempt can follow, and the client has sent it.
func (r *Router) try(ctx context.Context, ep *endpoint, req *upstream.Request, yield func(upstream.Event, error) bool) (_ outcome, err error) {
	obs := Request{EndpointID: ep.ID}
	start := time.Now()
	defer func() { r.observe(ctx, obs, start, err) }()
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(r.opts.FirstByteTimeout, func() { cancel(errFirstByte) })
	defer timer.Stop()
	epReq := ep.request(*req)
	mode := epReq.JSON.ModeUsed() // read now: the loop must not keep epReq alive
	// The EventCreated held back, kept as a value: taking &ev would move every event of
	// the loop to the heap.
	var held upstream.Event
	hasHeld := false
	committed := false
	for ev, err := range ep.Client.Stream(actx, epReq) {
		timer.Stop()
		if obs.FirstByte == 0 {
			obs.FirstByte = time.Since(start)
		}
		if err != nil {
			return r.failure(ctx, actx, ep, committed, err)
		}
		ev.EndpointID, ev.Provider, ev.OutputMode = ep.ID, ep.Provider, mode
		if !committed && ev.Kind == upstream.EventCreated && !hasHeld {
			held, hasHeld = ev, true
			continue
		}
		if !committed {
			committed = true
			*req = upstream.Request{}
			ep.br.success()
			if hasHeld && !yield(held, nil) {
				return finished, nil
			}
		}
		if !yield(ev, nil) {
			return finished, nil
		}
	}
	if !committed {
		ep.br.release()
	}
	return finished, nil
}

// observe tells Options.Observe of a request that ended with err.
func (r *Router) observe(ctx context.Context, obs Request, start time.Time, err error) {
	if r.opts.Observe == nil {
		return
	}
	obs.Total, obs.Outcome = time.Since(start), "ok"
	var ue *upstream.Error
	switch {
	case err == nil:
	case ctx.Err() != nil:
		obs.Outcome = "cancelled"
	case errors.As(err, &ue):
		obs.Outcome = ue.Kind.String()
	default:
		obs.Outcome = upstream.KindProvider.String()
	}
	r.opts.Observe(obs)
}

// failure classifies the error that ended an attempt and records it on ep's breaker.
func (r *Router) failure(ctx, actx context.Context, ep *endpoint, committed bool, err error) (outcome, error) {
	if ctx.Err() != nil { // the turn itself ended: not the endpoint's fault
		ep.br.release()
		return ended, ctx.Err()
	}
	if errors.Is(context.Cause(actx), errFirstByte) {
		err = &upstream.Error{Kind: upstream.KindTimeout, Message: fmt.Sprintf("endpoint %d sent nothing within %s", ep.ID, r.opts.FirstByteTimeout)}
	}
	if !unhealthy(err) {
		ep.br.release()
		return ended, err
	}
	ep.br.failure(time.Now())
	if committed {
		return ended, err
	}
	return failedOn, err
}

// unhealthy reports whether err says the endpoint is down or overloaded, rather than
// that it refused this request: connect errors and 5xx (upstream_unavailable), 429 (a
// rate limit, or a quota the account has used), 402 (an account that cannot pay),
// time-outs and 408.
func unhealthy(err error) bool {
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		return false
	}
	switch ue.Kind {
	case upstream.KindRateLimited, upstream.KindUnavailable, upstream.KindTimeout:
		return true
	}
	switch ue.HTTPStatus {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusPaymentRequired:
		return true
	}
	return false
}

// request is req as ep is sent it: with ep's model, and a JSON request in ep's output mode.
func (ep *endpoint) request(req upstream.Request) upstream.Request {
	if ep.Model != "" {
		req.Model = ep.Model
	}
	if req.JSON != nil {
		out := *req.JSON
		out.Mode = ep.JSONMode
		req.JSON = &out
	}
	return req
}
