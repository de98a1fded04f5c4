package store_test

import (
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// BenchmarkCommitOneEvent is the event log's commit of a lone delta, the one on the path to
// a client's first delta at low load: its time per op is a floor for the added time to
// first delta (docs/performance.md).
func BenchmarkCommitOneEvent(b *testing.B) {
	benchEach(b, func(b *testing.B, s *store.Store) {
		a := benchTurn(b, s)
		b.ResetTimer()
		for i := range b.N {
			if _, err := s.CommitEvents(b.Context(), testOwner, events(a.ID, int64(i+1), int64(i+1))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchEach runs fn as a sub-benchmark on each database, allocations reported
// (storetest.Each for benchmarks).
func benchEach(b *testing.B, fn func(b *testing.B, s *store.Store)) {
	for _, db := range []struct {
		name string
		open func(testing.TB) *store.Store
	}{{"postgres", storetest.Postgres}, {"sqlite", storetest.SQLite}} {
		b.Run(db.name, func(b *testing.B) {
			s := db.open(b)
			b.ReportAllocs()
			fn(b, s)
		})
	}
}

// benchTurn begins a turn in a session of its own and returns its assistant message,
// running under testOwner's lease.
func benchTurn(b *testing.B, s *store.Store) *store.Message {
	sess := &store.Session{UserID: "bench", Title: "t", Locale: "en", Phase: "strategy", Status: "active"}
	if err := s.CreateSession(b.Context(), sess); err != nil {
		b.Fatal(err)
	}
	u := &store.Message{SessionID: sess.ID, UserID: sess.UserID, Content: "go", Phase: sess.Phase, RequestID: "req-bench"}
	a := &store.Message{}
	if err := s.CreateTurn(b.Context(), u, a, store.TurnStart{Lease: store.Lease{Owner: testOwner, TTL: time.Hour}}); err != nil {
		b.Fatal(err)
	}
	return a
}
