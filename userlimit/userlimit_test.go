package userlimit

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestTurns(t *testing.T) {
	tr := NewTurns(2)
	for i := range 2 {
		if err := tr.Acquire("alice", 0); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
	}
	if err := tr.Acquire("alice", 0); !errors.Is(err, ErrTooManyTurns) {
		t.Fatalf("third turn: %v, want ErrTooManyTurns", err)
	}
	if err := tr.Acquire("bob", 0); err != nil {
		t.Fatalf("another user is not limited by alice: %v", err)
	}
	tr.Release("alice")
	if err := tr.Acquire("alice", 0); err != nil {
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
			if tr.Acquire("alice", 0) != nil {
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

// TestTurnsCountOtherReplicas: generations running elsewhere take the user's slots too.
func TestTurnsCountOtherReplicas(t *testing.T) {
	tr := NewTurns(2)
	if err := tr.Acquire("alice", 1); err != nil {
		t.Fatalf("one here and one elsewhere under a bound of two: %v", err)
	}
	if err := tr.Acquire("alice", 1); !errors.Is(err, ErrTooManyTurns) {
		t.Fatalf("two here and one elsewhere: %v, want ErrTooManyTurns", err)
	}
	if err := tr.Acquire("alice", 0); err != nil {
		t.Fatalf("two here, none elsewhere: %v", err)
	}
}
