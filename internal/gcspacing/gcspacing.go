// Package gcspacing keeps the garbage collector's cycles an interval apart while the heap
// is small and the process allocates fast: after each cycle it raises GOGC so that the
// next goal leaves room for what the process allocated in one interval at its latest
// rate, up to a heap size cap, and never lowers GOGC below what it started with.
//
// The collector's next goal is the live heap times (1 + GOGC/100). A replica's live heap
// under load is small (5–6 MB at 64 concurrent turns) while it allocates fast (about
// 400 KB a turn, 120 MB a second), so at GOGC=100 it collected every 50 ms, and marking,
// assists, sweeping and the scavenger's returns were about a third of its CPU (perf, c=64
// sweep). With a 200 ms interval and a 24 MiB cap its goal there is 24 MiB instead of
// 11–13 MB, a cycle about every 150 ms, for 13–17 MB more RSS. Where the heap allocates
// slowly, as with a thousand streams that each wait seconds between frames, the room one
// interval needs is small and GOGC stays the operator's: a fixed floor (the first form of
// this package) grew such a replica by 20 KiB a stream. A heap whose live part is past
// the cap, as with thousands of open generations, collects at GOGC's own pace. GOMEMLIMIT,
// when set, still caps every goal: the collector takes the lower.
//
// A raised GOGC is given back once no cycle has come for quietCycles intervals: the load
// that asked for the room has stopped, and the next allocation then collects what it left
// (a burst of a thousand followers opening kept 10–15 MB of its garbage past the burst,
// 11–15 KiB a follower against 6 with no spacing, as a slow heap never reached the raised
// goal).
package gcspacing

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// quietCycles is how many intervals without a cycle end the raised GOGC.
const quietCycles = 5

// runtimeMinHeap is the runtime's own minimum goal at GOGC=100 (defaultHeapMinimum), which
// it scales by GOGC/100 too: a percentage above limit/runtimeMinHeap×100 would put even an
// empty heap's goal above the cap.
const runtimeMinHeap = 4 << 20

// The metrics read after each cycle: the heap the cycle marked live (what GOGC multiplies)
// and the bytes allocated since the process started.
const (
	liveMetric   = "/gc/heap/live:bytes"
	allocsMetric = "/gc/heap/allocs:bytes"
)

// Spacer raises GOGC after each collection; Stop ends it.
type Spacer struct {
	limit    uint64        // the heap size up to which cycles are spaced
	interval time.Duration // the spacing sought
	base     int           // GOGC as the process started with it

	mu         sync.Mutex
	stopped    bool
	quiet      *time.Timer // gives GOGC back when no cycle comes (calm)
	sample     []metrics.Sample
	lastAt     time.Time // when the last cycle's call ran
	lastAllocs uint64    // the allocation total then
	applied    int       // calls so far (tests wait on it)
}

// sentinel is allocated for each cycle, so that its cleanup runs after the collection that
// finds it unreachable. It holds a pointer so that it is never one of the tiny allocator's
// combined blocks, whose members are freed together, late.
type sentinel struct {
	_ *int
	_ [8]byte
}

// Start spaces collections interval apart while the heap stays under limit bytes. It does
// nothing when limit or interval is 0, or when the collector is off (GOGC=off): the
// operator's choices. Stop gives the starting GOGC back.
func Start(limit uint64, interval time.Duration) *Spacer {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	s := &Spacer{limit: limit, interval: interval, base: base,
		sample: []metrics.Sample{{Name: liveMetric}, {Name: allocsMetric}}}
	if limit == 0 || interval <= 0 || base < 0 {
		s.stopped = true
		return s
	}
	s.quiet = time.AfterFunc(quietCycles*interval, s.calm) // GOGC is still base: a no-op unless reset
	s.apply()
	return s
}

// Stop ends the spacing and restores the starting GOGC. It is safe to call more than once.
func (s *Spacer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	s.quiet.Stop()
	debug.SetGCPercent(s.base)
}

// calm gives the starting GOGC back: no cycle came for quietCycles intervals.
func (s *Spacer) calm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		debug.SetGCPercent(s.base)
	}
}

// apply sets the percentage for the next goal from the allocation rate since the last call
// (none at the first: GOGC stays) and arms the next cycle's call.
func (s *Spacer) apply() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	metrics.Read(s.sample)
	live, allocs, now := s.sample[0].Value.Uint64(), s.sample[1].Value.Uint64(), time.Now()
	var room uint64
	if elapsed := now.Sub(s.lastAt); !s.lastAt.IsZero() && elapsed > 0 {
		room = uint64(float64(allocs-s.lastAllocs) * float64(s.interval) / float64(elapsed))
	}
	s.lastAt, s.lastAllocs = now, allocs
	s.applied++
	p := percent(s.limit, live, room, s.base)
	debug.SetGCPercent(p)
	if p > s.base {
		s.quiet.Reset(quietCycles * s.interval)
	}
	runtime.AddCleanup(new(sentinel), func(s *Spacer) { s.apply() }, s)
}

// percent is the GOGC that leaves room bytes above a live heap of live bytes, with the
// goal no higher than limit (nor the runtime's minimum goal, which a small or empty heap
// gets), and never below base.
func percent(limit, live, room uint64, base int) int {
	if live >= limit {
		return base
	}
	goal := min(live+room, limit)
	p := int(goal * 100 / runtimeMinHeap) // an empty heap's goal is the runtime's minimum
	if live > 0 {
		p = min(p, int((goal-live)*100/live))
	}
	return max(base, p)
}
