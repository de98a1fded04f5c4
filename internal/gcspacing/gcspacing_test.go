package gcspacing

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name              string
		limit, live, room uint64
		base, want        int
	}{
		{"room of three live heaps", 32 * mib, 8 * mib, 24 * mib, 100, 300},
		{"room past the limit stops at it", 32 * mib, 8 * mib, 100 * mib, 100, 300},
		{"room under GOGC's own leaves GOGC", 32 * mib, 8 * mib, 2 * mib, 100, 100},
		{"no room measured leaves GOGC", 32 * mib, 8 * mib, 0, 100, 100},
		{"a live heap at the limit is GOGC's own", 32 * mib, 32 * mib, 24 * mib, 100, 100},
		{"an operator's larger GOGC stands", 32 * mib, 8 * mib, 24 * mib, 400, 400},
		{"an operator's smaller GOGC is raised", 32 * mib, 8 * mib, 24 * mib, 50, 300},
		{"an empty heap's goal is the runtime's minimum raised to the room", 32 * mib, 0, 16 * mib, 100, 400},
		{"a tiny heap's goal is the runtime's minimum raised to the limit", 32 * mib, 100, 100 * mib, 100, 800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percent(tc.limit, tc.live, tc.room, tc.base); got != tc.want {
				t.Errorf("percent(%d, %d, %d, %d) = %d, want %d", tc.limit, tc.live, tc.room, tc.base, got, tc.want)
			}
		})
	}
}

// cycles is the number of collections the process has finished.
func cycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// churn allocates n bytes of garbage in 64 KiB pieces as fast as it can and returns how
// many collections ran meanwhile.
func churn(n int) uint64 {
	before := cycles()
	var keep []byte
	for range n >> 16 {
		keep = make([]byte, 64<<10)
		keep[0] = 1
	}
	runtime.KeepAlive(keep)
	return cycles() - before
}

// settle forces a collection and waits for s to have run after it.
func settle(t *testing.T, s *Spacer) {
	t.Helper()
	s.mu.Lock()
	want := s.applied + 1
	s.mu.Unlock()
	runtime.GC()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		n := s.applied
		s.mu.Unlock()
		if n >= want {
			return
		}
	}
	t.Fatal("no call after a collection within 5s")
}

// TestSpacingDefersCollectionsUnderLoad allocates the same garbage fast with spacing and
// without: the test binary's live heap is a few MB, so without spacing the collector runs
// every few MB; with a second's spacing up to 256 MiB, the first cycle measures the rate
// and the rest of 128 MiB needs hardly another.
//
// Without spacing the count is the runtime's own and varies: what is allocated while a
// cycle marks counts as live for the next goal, so a mark phase slowed by a busy machine
// leaves fewer, larger cycles (5 to 41 seen for the same 128 MiB). The unspaced churn is
// tried up to three times for a baseline that can tell.
func TestSpacingDefersCollectionsUnderLoad(t *testing.T) {
	var without uint64
	for try := 0; try < 3 && without < 8; try++ {
		runtime.GC()
		without = max(without, churn(128<<20))
	}
	if without < 8 {
		t.Fatalf("only %d collections without spacing: the test cannot tell spacing's effect", without)
	}
	runtime.GC()
	s := Start(256<<20, time.Second)
	defer s.Stop()
	with := churn(128 << 20)
	t.Logf("collections for 128 MiB of garbage: %d without spacing, %d with it", without, with)
	if with > 3 {
		t.Errorf("%d collections with spacing, want at most 3 (%d without)", with, without)
	}
}

// TestSlowAllocationKeepsGOGC is a replica holding many waiting streams: it allocates
// little between collections, so spacing must not grow its heap.
func TestSlowAllocationKeepsGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)
	s := Start(1<<30, 200*time.Millisecond)
	defer s.Stop()
	settle(t, s)
	time.Sleep(400 * time.Millisecond) // room for 200 ms at this pace: under a live heap
	settle(t, s)
	if p := gogc(s); p != before {
		t.Errorf("GOGC after a slow interval = %d, want the starting %d", p, before)
	}
}

// TestQuietGivesGOGCBack is a burst of load that stops: the GOGC raised for it goes back
// once no cycle has come for quietCycles intervals, so what the burst left is collected.
// The burst goes on until a cycle's call has raised GOGC (which call does depends on where
// the cycles fall), then stops.
func TestQuietGivesGOGCBack(t *testing.T) {
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)
	const interval = 20 * time.Millisecond
	s := Start(1<<30, interval)
	defer s.Stop()
	settle(t, s)
	for deadline := time.Now().Add(5 * time.Second); gogc(s) <= before; churn(4 << 20) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d after 5s of allocating fast, want above the starting %d", gogc(s), before)
		}
	}
	time.Sleep(3 * quietCycles * interval)
	if p := gogc(s); p != before {
		t.Errorf("GOGC after %v without a cycle = %d, want the starting %d", 3*quietCycles*interval, p, before)
	}
}

// gogc reads GOGC while s cannot change it (apply and calm set it under s.mu).
func gogc(s *Spacer) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

func TestStopRestoresGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)
	s := Start(1<<30, time.Hour)
	settle(t, s)
	if p := gogc(s); p <= before {
		t.Errorf("GOGC with an hour's spacing = %d, want above %d", p, before)
	}
	debug.SetGCPercent(before)
	s.Stop()
	s.Stop()
	runtime.GC() // a call still due must not raise it again
	runtime.GC()
	if p := debug.SetGCPercent(before); p != before {
		t.Errorf("GOGC after Stop = %d, want %d", p, before)
	}
}

func TestOffStaysOff(t *testing.T) {
	before := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(before)
	s := Start(32<<20, time.Second)
	defer s.Stop()
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Errorf("GOGC = %d after Start with the collector off, want -1 (off)", p)
	}
}
