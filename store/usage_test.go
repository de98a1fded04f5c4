package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// TestUsageCountsEveryCall: calls counted at once are all kept up to the limit and none
// past it, each user and day apart, and tokens add up beside them.
func TestUsageCountsEveryCall(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var wg sync.WaitGroup
		var mu sync.Mutex
		counted := 0
		for range 30 {
			wg.Go(func() {
				ok, err := s.CountCall(ctx, "ann", "2026-12-01", 20)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					counted++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if counted != 20 {
			t.Fatalf("30 calls at once against a limit of 20: %d counted, want 20", counted)
		}
		if ok, err := s.CountCall(ctx, "ann", "2026-12-02", 20); err != nil || !ok {
			t.Fatalf("the next day's first call: %v %v", ok, err)
		}
		if ok, err := s.CountCall(ctx, "bob", "2026-12-01", 20); err != nil || !ok {
			t.Fatalf("bob's first call: %v %v", ok, err)
		}
		if err := s.AddTokens(ctx, "ann", "2026-12-01", 100, 7); err != nil {
			t.Fatal(err)
		}
		if err := s.AddTokens(ctx, "ann", "2026-12-01", 5, 3); err != nil {
			t.Fatal(err)
		}
		u, err := s.UsageOn(ctx, "ann", "2026-12-01")
		if err != nil {
			t.Fatal(err)
		}
		if u != (store.Usage{Day: "2026-12-01", Calls: 20, InputTokens: 105, OutputTokens: 10}) {
			t.Fatalf("usage = %+v, want 20 calls and 105/10 tokens", u)
		}
		if u, err := s.UsageOn(ctx, "carl", "2026-12-01"); err != nil || u.Calls != 0 || u.Day != "2026-12-01" {
			t.Fatalf("a user without calls has usage %+v (%v), want zero", u, err)
		}
	})
}
