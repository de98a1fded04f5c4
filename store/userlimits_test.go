package store_test

import (
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// TestMessageRate: a burst of two, then one a second; a message given back is free again,
// and each user has an allowance of their own.
func TestMessageRate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		now := time.Unix(1_800_000_000, 0)
		take := func(user string, at time.Time) (bool, time.Duration) {
			t.Helper()
			ok, retry, err := s.TakeMessage(ctx, user, at, time.Second, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return ok, retry
		}
		for i := range 2 {
			if ok, _ := take("alice", now); !ok {
				t.Fatalf("message %d of a burst of two refused", i+1)
			}
		}
		if ok, retry := take("alice", now); ok || retry <= 0 || retry > time.Second {
			t.Fatalf("a third message at once: ok %v, retry %v; want refused within a second", ok, retry)
		}
		if ok, _ := take("bob", now); !ok {
			t.Fatal("bob is limited by alice's allowance")
		}
		if err := s.GiveMessage(ctx, "alice", time.Second); err != nil {
			t.Fatal(err)
		}
		if ok, _ := take("alice", now); !ok {
			t.Fatal("a message given back is not free again")
		}
		if ok, _ := take("alice", now.Add(time.Second)); !ok {
			t.Fatal("a second later one more message is allowed")
		}
	})
}
