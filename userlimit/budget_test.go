package userlimit

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

type fakeModel struct{ calls int }

func (f *fakeModel) Stream(context.Context, upstream.Request) iter.Seq2[upstream.Event, error] {
	f.calls++
	return func(yield func(upstream.Event, error) bool) {
		if yield(upstream.Event{Kind: upstream.EventTextDelta, Delta: "hi"}, nil) {
			yield(upstream.Event{Kind: upstream.EventCompleted, Usage: &upstream.Usage{InputTokens: 10, OutputTokens: 2}}, nil)
		}
	}
}

type fakeCounter struct{ usage map[string]store.Usage }

func (f *fakeCounter) CountCall(_ context.Context, user, day string, limit int64) (bool, error) {
	u := f.usage[user+day]
	if u.Calls >= limit {
		return false, nil
	}
	u.Day, u.Calls = day, u.Calls+1
	f.usage[user+day] = u
	return true, nil
}

func (f *fakeCounter) AddTokens(_ context.Context, user, day string, in, out int64) error {
	u := f.usage[user+day]
	u.InputTokens, u.OutputTokens = u.InputTokens+in, u.OutputTokens+out
	f.usage[user+day] = u
	return nil
}

func (f *fakeCounter) UsageOn(_ context.Context, user, day string) (store.Usage, error) {
	u := f.usage[user+day]
	u.Day = day
	return u, nil
}

func drain(m *Meter, owner string) error {
	for _, err := range m.Stream(context.Background(), upstream.Request{Owner: owner}) {
		if err != nil {
			return err
		}
	}
	return nil
}

func TestMeter(t *testing.T) {
	model, count := &fakeModel{}, &fakeCounter{usage: map[string]store.Usage{}}
	m := NewMeter(model, count, 2, slog.New(slog.DiscardHandler))
	m.now = func() time.Time { return time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC) }
	ctx := context.Background()
	for i := range 2 {
		if err := m.Allow(ctx, "ann"); err != nil {
			t.Fatalf("call %d refused: %v", i+1, err)
		}
		if err := drain(m, "ann"); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	var exhausted *ExhaustedError
	if err := m.Allow(ctx, "ann"); !errors.As(err, &exhausted) || exhausted.Limit != 2 {
		t.Fatalf("Allow past the budget = %v, want an *ExhaustedError", err)
	}
	if err := drain(m, "ann"); !errors.As(err, &exhausted) || exhausted.Limit != 2 {
		t.Fatalf("a call past the budget = %v, want an *ExhaustedError", err)
	}
	if model.calls != 2 {
		t.Fatalf("the model was called %d times, want 2: a refused call never reaches it", model.calls)
	}
	if err := m.Allow(ctx, "bob"); err != nil {
		t.Fatalf("another user is refused: %v", err)
	}
	u, err := m.Usage(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if u.Calls != 2 || u.InputTokens != 20 || u.OutputTokens != 4 || u.Budget != 2 || !u.Resets.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("usage = %+v, want the 2 calls made, 20/4 tokens, budget 2, resetting at midnight UTC", u)
	}
	m.now = func() time.Time { return time.Date(2026, 12, 3, 0, 0, 1, 0, time.UTC) }
	if err := m.Allow(ctx, "ann"); err != nil {
		t.Fatalf("a new UTC day is still refused: %v", err)
	}
}

func TestNoBudgetCountsNothing(t *testing.T) {
	model, count := &fakeModel{}, &fakeCounter{usage: map[string]store.Usage{}}
	m := NewMeter(model, count, 0, slog.New(slog.DiscardHandler))
	for range 5 {
		if err := drain(m, "ann"); err != nil {
			t.Fatal(err)
		}
	}
	if len(count.usage) != 0 || m.Allow(context.Background(), "ann") != nil {
		t.Fatalf("with no budget the meter counted %v", count.usage)
	}
}
