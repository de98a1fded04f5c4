package router

import (
	"context"
	"iter"
	"testing"

	"github.com/phaseflow/phaseflow/upstream"
)

// replay is a Streamer that yields the same events on every call, without a network: what
// the router itself adds to each event.
type replay []upstream.Event

func (r replay) Stream(context.Context, upstream.Request) iter.Seq2[upstream.Event, error] {
	return func(yield func(upstream.Event, error) bool) {
		for _, ev := range r {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// BenchmarkStreamTurn routes a turn of 100 deltas: the allocations per turn (allocs/op)
// must not grow with the events, which an event moved to the heap per iteration would do.
func BenchmarkStreamTurn(b *testing.B) {
	evs := replay{{Kind: upstream.EventCreated, ResponseID: "resp_1"}}
	for range 100 {
		evs = append(evs, upstream.Event{Kind: upstream.EventTextDelta, Delta: "hi"})
	}
	evs = append(evs, upstream.Event{Kind: upstream.EventCompleted, ResponseID: "resp_1"})
	r, err := New([]Endpoint{{ID: 1, Provider: "p", Client: evs}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		n := 0
		for _, err := range r.Stream(ctx, upstream.Request{}) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != len(evs) {
			b.Fatalf("%d events routed, want %d", n, len(evs))
		}
	}
}
