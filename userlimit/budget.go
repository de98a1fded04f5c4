package userlimit

// The per-user model-call budget (PHASEFLOW_USER_CALL_BUDGET): every upstream call made for
// a user, a turn's attempts and a JSON skill's calls alike, is counted in the database for
// the user's UTC day, so the budget holds across replicas. Past it, new work is refused
// (Meter.Allow, answered 429 budget_exhausted by the API) and a call a running turn or
// skill would still make fails as a rate limit.

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// Upstream is the model the meter counts calls to: the router.
type Upstream interface {
	Stream(ctx context.Context, req upstream.Request) iter.Seq2[upstream.Event, error]
}

// CallCounter keeps the counts (package store).
type CallCounter interface {
	CountCall(ctx context.Context, userID, day string, limit int64) (bool, error)
	AddTokens(ctx context.Context, userID, day string, input, output int64) error
	UsageOn(ctx context.Context, userID, day string) (store.Usage, error)
}

// ExhaustedError refuses work past a user's budget until the next UTC day.
type ExhaustedError struct {
	Limit      int64
	RetryAfter time.Duration
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("userlimit: the day's %d model calls are used", e.Limit)
}

// Meter counts every call made through it for its request's Owner. With no limit, or for
// a call without an owner, it passes the call through uncounted.
type Meter struct {
	model  Upstream
	count  CallCounter
	limit  int64 // calls a user may make a day; 0: no budget, nothing is counted
	logger *slog.Logger
	now    func() time.Time
}

// NewMeter returns a meter over model allowing limit calls a user a day (0: no budget).
func NewMeter(model Upstream, count CallCounter, limit int64, logger *slog.Logger) *Meter {
	return &Meter{model: model, count: count, limit: limit, logger: logger, now: time.Now}
}

// Usage is a user's usage today, with the budget (0: none) and when the day ends.
type Usage struct {
	store.Usage
	Budget int64     `json:"budget"`
	Resets time.Time `json:"resets_at"`
}

// day is the UTC date t falls on, and when that day ends.
func day(t time.Time) (string, time.Time) {
	t = t.UTC()
	return t.Format(time.DateOnly), time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
}

// Allow refuses new work for userID with an *ExhaustedError when the day's budget is used.
func (m *Meter) Allow(ctx context.Context, userID string) error {
	if m.limit == 0 {
		return nil
	}
	u, err := m.Usage(ctx, userID)
	if err != nil {
		return err
	}
	if u.Calls >= m.limit {
		return &ExhaustedError{Limit: m.limit, RetryAfter: time.Until(u.Resets)}
	}
	return nil
}

// Usage reads userID's usage today.
func (m *Meter) Usage(ctx context.Context, userID string) (Usage, error) {
	d, resets := day(m.now())
	u, err := m.count.UsageOn(ctx, userID, d)
	if err != nil {
		return Usage{}, fmt.Errorf("budget: %w", err)
	}
	return Usage{Usage: u, Budget: m.limit, Resets: resets}, nil
}

// Stream counts the call for req.Owner, refuses it past the budget (an *ExhaustedError,
// which a turn or a run ends with as budget_exhausted), and adds the tokens the provider
// reports once the call ends.
func (m *Meter) Stream(ctx context.Context, req upstream.Request) iter.Seq2[upstream.Event, error] {
	if m.limit == 0 || req.Owner == "" {
		return m.model.Stream(ctx, req)
	}
	return func(yield func(upstream.Event, error) bool) {
		d, resets := day(m.now())
		counted, err := m.count.CountCall(ctx, req.Owner, d, m.limit)
		if err != nil {
			yield(upstream.Event{}, fmt.Errorf("budget: %w", err))
			return
		}
		if !counted {
			yield(upstream.Event{}, &ExhaustedError{Limit: m.limit, RetryAfter: time.Until(resets)})
			return
		}
		var in, out int64
		for ev, err := range m.model.Stream(ctx, req) {
			if ev.Usage != nil {
				in, out = in+int64(ev.Usage.InputTokens), out+int64(ev.Usage.OutputTokens)
			}
			if !yield(ev, err) {
				break
			}
		}
		if in+out > 0 {
			// The call is over: its tokens are recorded even if the caller has gone.
			if err := m.count.AddTokens(context.WithoutCancel(ctx), req.Owner, d, in, out); err != nil {
				// Tokens are the report, calls the budget: a lost token count is logged and
				// never refuses work.
				m.logger.Warn("tokens of a model call not counted", "user_id", req.Owner, "err", err)
			}
		}
	}
}
