package userlimit

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestTurns(t *testing.T) {
	tr := NewTurns(2)
	for i := range 2 {
		if err := tr.Acquire("alice"); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
	}
	if err := tr.Acquire("alice"); !errors.Is(err, ErrTooManyTurns) {
		t.Fatalf("third turn: %v, want ErrTooManyTurns", err)
	}
	if err := tr.Acquire("bob"); err != nil {
		t.Fatalf("another user is not limited by alice: %v", err)
	}
	tr.Release("alice")
	if err := tr.Acquire("alice"); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	tr.Release("alice")
	tr.Release("alice")
	tr.Release("bob")
	if len(tr.running) != 0 {
		t.Fatalf("entries left after every release: %v", tr.running)
	}
}

func TestTurnsConcurrent(t *testing.T) {
	tr := NewTurns(3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted, peak := 0, 0
	for range 50 {
		wg.Go(func() {
			if tr.Acquire("alice") != nil {
				return
			}
			mu.Lock()
			granted++
			peak = max(peak, tr.Running("alice"))
			mu.Unlock()
			time.Sleep(time.Millisecond)
			tr.Release("alice")
		})
	}
	wg.Wait()
	if peak > 3 || granted == 0 || tr.Running("alice") != 0 {
		t.Fatalf("peak %d (max 3), granted %d, left %d", peak, granted, tr.Running("alice"))
	}
}

func TestRate(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	r := NewRate(60, 3, 0) // one a second, three at once
	r.now = func() time.Time { return now }
	for i := range 3 {
		if ok, _ := r.Allow("alice"); !ok {
			t.Fatalf("message %d of the burst refused", i+1)
		}
	}
	ok, wait := r.Allow("alice")
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("fourth message: ok=%v wait=%v, want refused with a wait up to 1s", ok, wait)
	}
	if ok, _ := r.Allow("bob"); !ok {
		t.Fatal("bob is limited by alice's bucket")
	}
	now = now.Add(time.Second)
	if ok, _ := r.Allow("alice"); !ok {
		t.Fatal("a second later one message should be allowed again")
	}
	if ok, _ := r.Allow("alice"); ok {
		t.Fatal("refused attempts must not have used up tokens, but accepted ones do")
	}
}

func TestRateMapIsBounded(t *testing.T) {
	r := NewRate(60, 1, 100)
	for i := range 1000 {
		r.Allow(fmt.Sprintf("user-%d", i))
	}
	if r.Users() != 100 {
		t.Fatalf("%d buckets remembered, want the bound 100", r.Users())
	}
	if ok, _ := r.Allow("user-999"); ok {
		t.Fatal("the most recent user's bucket was dropped")
	}
	if ok, _ := r.Allow("user-0"); !ok {
		t.Fatal("the oldest user's bucket should have been dropped (and start full)")
	}
}
