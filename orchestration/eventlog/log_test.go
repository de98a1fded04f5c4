package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql keeps a connection opener per pool until the pool closes.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}

// owner is the replica id the tests' logs write as.
const owner = "replica-1"

// gatedStore wraps a real store: it counts commits, can hold them (gate) or fail them as if
// the database were down, and records which seqs are committed, so a test can check that a
// follower never sees an event before the database has it.
type gatedStore struct {
	*store.Store
	commits atomic.Int64
	first   atomic.Int64 // events in the first commit
	down    atomic.Bool
	gate    chan struct{} // when non-nil, each commit waits for a receive

	alone atomic.Int64 // writes of traces without events (RecordTraces), tried

	mu        sync.Mutex
	committed map[string]int64 // message → highest committed seq
	traced    []int64          // seqs of the committed events that carried traces
}

func newGated(st *store.Store) *gatedStore {
	return &gatedStore{Store: st, committed: map[string]int64{}}
}

func (g *gatedStore) CommitEvents(ctx context.Context, owner string, evs []store.Event) (store.Unwritten, error) {
	g.first.CompareAndSwap(0, int64(len(evs)))
	g.commits.Add(1)
	if g.gate != nil {
		<-g.gate
	}
	if g.down.Load() {
		return store.Unwritten{}, fmt.Errorf("store: commit events: %w", syscall.ECONNREFUSED)
	}
	un, err := g.Store.CommitEvents(ctx, owner, evs)
	if err == nil {
		g.mu.Lock()
		for _, e := range evs {
			g.committed[e.MessageID] = max(g.committed[e.MessageID], e.Seq)
			if len(e.Traces) > 0 {
				g.traced = append(g.traced, e.Seq)
			}
		}
		g.mu.Unlock()
	}
	return un, err
}

func (g *gatedStore) RecordTraces(ctx context.Context, owner, messageID string, traces []store.Trace) (bool, error) {
	g.alone.Add(1)
	if g.down.Load() {
		return false, fmt.Errorf("store: record traces: %w", syscall.ECONNREFUSED)
	}
	return g.Store.RecordTraces(ctx, owner, messageID, traces)
}

func (g *gatedStore) isCommitted(id string, seq int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.committed[id] >= seq
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// closeLog closes l with a deadline, failing the test when events were left unwritten.
func closeLog(t *testing.T, l *Log) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		t.Error(err)
	}
}

// newMessage makes a session and an assistant message owned by lease.
func newMessage(t *testing.T, st *store.Store, lease store.Lease) string {
	t.Helper()
	ctx := context.Background()
	sess := &store.Session{UserID: "u", Locale: "en", Phase: "strategy", Status: "active"}
	if err := st.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	user := &store.Message{SessionID: sess.ID, UserID: "u", Content: "hi"}
	asst := &store.Message{}
	if err := st.CreateTurn(ctx, user, asst, store.TurnStart{Lease: lease}); err != nil {
		t.Fatal(err)
	}
	return asst.ID
}

func ownLease() store.Lease { return store.Lease{Owner: owner, TTL: time.Hour} }

func delta(i int) events.DeltaData { return events.DeltaData{Seq: i, Delta: fmt.Sprintf("d%d ", i)} }

func mustOpen(t *testing.T, l *Log, id string, o Opening) *Writer {
	t.Helper()
	w, err := l.Open(id, o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// produce appends n deltas and a completed terminal event.
func produce(t *testing.T, l *Log, id string, n int) *Writer {
	t.Helper()
	ctx := context.Background()
	w := mustOpen(t, l, id, Opening{})
	for i := 1; i <= n; i++ {
		if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
			t.Fatal(err)
		}
	}
	done := &store.Message{Status: store.StatusCompleted, Content: "done"}
	if _, err := w.Finish(ctx, events.Completed, events.CompletedData{ReplyLen: n}, done); err != nil {
		t.Fatal(err)
	}
	return w
}

// follow reads a message from after to its terminal event (or a time limit) and returns
// the seqs seen; check, when set, runs on every event as it is delivered.
func follow(l *Log, id string, after, last int64, check func(store.Event)) ([]int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur := l.Follow(id, after, last)
	var seqs []int64
	for !cur.Ended() && ctx.Err() == nil {
		evs, wait, err := cur.Next(ctx)
		for _, ev := range evs {
			if check != nil {
				check(ev)
			}
			seqs = append(seqs, ev.Seq)
		}
		if err == nil && cur.Ended() {
			break
		}
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
	return seqs, cur.Ended()
}

func wantSeqs(t *testing.T, got []int64, from, to int64) {
	t.Helper()
	if int64(len(got)) != to-from+1 {
		t.Fatalf("got %d events (%v…), want seqs %d..%d", len(got), head(got), from, to)
	}
	for i, s := range got {
		if s != from+int64(i) {
			t.Fatalf("event %d has seq %d, want %d (gap or duplicate)", i, s, from+int64(i))
		}
	}
}

func head(s []int64) []int64 {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

func TestFollowersSeeOnlyCommittedEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		g := newGated(st)
		l := New(g, owner, quiet(), Options{})
		defer closeLog(t, l)
		id := newMessage(t, st, ownLease())
		var early atomic.Int64
		results := make(chan []int64, 2)
		for range 2 {
			go func() {
				seqs, _ := follow(l, id, 0, 0, func(ev store.Event) {
					if !g.isCommitted(id, ev.Seq) {
						early.Add(1)
					}
				})
				results <- seqs
			}()
		}
		produce(t, l, id, 200)
		for range 2 {
			wantSeqs(t, <-results, 1, 201)
		}
		if n := early.Load(); n > 0 {
			t.Fatalf("%d events reached a follower before they were committed", n)
		}
		m, err := st.GetMessage(context.Background(), id, "u")
		if err != nil || m.Status != store.StatusCompleted || m.Content != "done" || m.LastEventID != 201 {
			t.Fatalf("message after its terminal event = %+v, %v; want completed with its outcome", m, err)
		}
	})
}

func TestHeldCommitHoldsDelivery(t *testing.T) {
	st := storetest.SQLite(t)
	g := newGated(st)
	g.gate = make(chan struct{})
	l := New(g, owner, quiet(), Options{})
	id := newMessage(t, st, ownLease())
	w := mustOpen(t, l, id, Opening{})
	if _, err := w.Append(context.Background(), events.ContentDelta, delta(1)); err != nil {
		t.Fatal(err)
	}
	cur := l.Follow(id, 0, 0)
	for range 3 { // the commit is held: nothing may be delivered, however often we look
		if evs, _, _ := cur.Next(context.Background()); len(evs) > 0 {
			t.Fatalf("delivered %d uncommitted events", len(evs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.gate <- struct{}{} // let the commit through
	evs, wait, _ := cur.Next(context.Background())
	for len(evs) == 0 {
		<-wait
		evs, wait, _ = cur.Next(context.Background())
	}
	if evs[0].Seq != 1 {
		t.Fatalf("first delivered seq %d, want 1", evs[0].Seq)
	}
	close(g.gate)
	closeLog(t, l)
}

func TestReplayFromDatabaseAfterTheStreamEnded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		l := New(st, owner, quiet(), Options{})
		defer closeLog(t, l)
		id := newMessage(t, st, ownLease())
		w := produce(t, l, id, 1200) // more than two pages
		if err := w.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name  string
			after int64
		}{
			{"from the start", 0},
			{"resume mid-page", 7},
			{"resume past the first page", 600},
			{"resume before the terminal event", 1200},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				seqs, ended := follow(l, id, tc.after, 1201, nil)
				if !ended {
					t.Fatal("follower did not reach the terminal event")
				}
				wantSeqs(t, seqs, tc.after+1, 1201)
			})
		}
	})
}

func TestReconnectPastTheEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		l := New(st, owner, quiet(), Options{})
		defer closeLog(t, l)
		id := newMessage(t, st, ownLease())
		w := mustOpen(t, l, id, Opening{})
		ctx := context.Background()
		for i := 1; i <= 3; i++ {
			if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan []int64, 1)
		go func() {
			seqs, ended := follow(l, id, 50, 3, nil) // the client claims 50; the log has 3
			if !ended {
				seqs = append(seqs, -1)
			}
			done <- seqs
		}()
		if _, err := w.Finish(ctx, events.Error, events.ErrorData{Code: failure.Cancelled}, &store.Message{Status: store.StatusCancelled}); err != nil {
			t.Fatal(err)
		}
		if seqs := <-done; len(seqs) != 0 {
			t.Fatalf("a follower past the end got %v, want nothing and the end of its stream", seqs)
		}
	})
}

func TestGroupCommit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		g := newGated(st)
		l := New(g, owner, quiet(), Options{})
		defer closeLog(t, l)
		id := newMessage(t, st, ownLease())
		w := produce(t, l, id, 1000)
		if err := w.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := g.commits.Load(); n > 100 {
			t.Fatalf("1001 events took %d commits, want them grouped (≤100)", n)
		}
	})
}

// A producer whose input is already buffered never blocks, so on one thread the commit loop
// would run only once it had appended everything: the first delta would reach clients with
// the last. The writer holds the producer until the first delta is committed, on its own.
// The bound is long here: a commit on a loaded CI machine under -race took longer than the
// default, and the bound itself is TestNudgeDoesNotWaitOutAnOutage's.
func TestNudgeCommitsTheFirstEventWithoutWaitingForTheRest(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		g := newGated(st)
		l := newLog(g, owner, quiet(), Options{}, tuning{nudgeWait: 10 * time.Second, pause: time.Hour})
		defer closeLog(t, l)
		ctx := context.Background()
		// A first message brings the commit loop to where a running server has it: idle.
		if err := produce(t, l, newMessage(t, st, ownLease()), 1).Wait(ctx); err != nil {
			t.Fatal(err)
		}
		g.first.Store(0)
		w := mustOpen(t, l, newMessage(t, st, ownLease()), Opening{})
		for i := 1; i <= 500; i++ {
			if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if n := g.first.Load(); n != 1 {
			t.Fatalf("the first commit held %d events, want the first delta alone", n)
		}
	})
}

// A delta that comes after a pause (a reply the model paces) is committed before its
// append returns, like an attempt's first; deltas that come at once are not waited for.
func TestPacedDeltaIsCommittedBeforeTheProducerGoesOn(t *testing.T) {
	st := storetest.SQLite(t)
	l := newLog(st, owner, quiet(), Options{}, tuning{nudgeWait: 10 * time.Second, pause: 20 * time.Millisecond})
	defer closeLog(t, l)
	w := mustOpen(t, l, newMessage(t, st, ownLease()), Opening{})
	ctx := context.Background()
	committed := func() int {
		w.s.mu.Lock()
		defer w.s.mu.Unlock()
		return w.s.committed
	}
	for i, pause := range []time.Duration{0, 0, 50 * time.Millisecond} {
		time.Sleep(pause)
		if _, err := w.Append(ctx, events.ContentDelta, delta(i+1)); err != nil {
			t.Fatal(err)
		}
		if i != 1 && committed() != i+1 {
			t.Fatalf("delta %d (after %v) returned with %d events committed, want it committed", i+1, pause, committed())
		}
	}
}

// The wait for a commit is brief: with the database down, the producer goes on reading
// its upstream (its appends wait for room as always).
func TestNudgeDoesNotWaitOutAnOutage(t *testing.T) {
	st := storetest.SQLite(t)
	g := newGated(st)
	l := newLog(g, owner, quiet(), Options{}, tuning{retryMin: 5 * time.Millisecond, retryMax: 20 * time.Millisecond})
	defer closeLog(t, l)
	w := mustOpen(t, l, newMessage(t, st, ownLease()), Opening{})
	g.down.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := w.Append(context.Background(), events.ContentDelta, delta(1))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first delta waited for a database that is down")
	}
	g.down.Store(false)
	if err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// An opening whose first events are still being written holds what the producer appends:
// nothing is committed or seen until Begun says the begin committed, and then it all goes,
// in order after the first events. A begin that failed drops it all unseen and fails the
// producer.
func TestUnwrittenOpeningHoldsEventsUntilBegun(t *testing.T) {
	first := func(id string) store.Event {
		return store.Event{MessageID: id, Seq: 1, Name: events.Status, Data: store.JSON(`{"state":"queued"}`), CreatedAt: time.Now().UTC()}
	}
	ctx := context.Background()
	appendThree := func(t *testing.T, w *Writer) {
		t.Helper()
		for i := 1; i <= 3; i++ {
			if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("begun", func(t *testing.T) {
		st := storetest.SQLite(t)
		g := newGated(st)
		l := newLog(g, owner, quiet(), Options{}, tuning{nudgeWait: time.Millisecond})
		defer closeLog(t, l)
		id := newMessage(t, st, ownLease())
		ev := first(id)
		w := mustOpen(t, l, id, Opening{LastSeq: 1, Committed: []store.Event{ev}, Unwritten: true})
		appendThree(t, w)
		time.Sleep(50 * time.Millisecond) // time for a commit, were any queued
		if n := g.commits.Load(); n != 0 {
			t.Fatalf("%d commits before the begin committed, want none", n)
		}
		if evs, _, _ := l.Follow(id, 0, 0).Next(ctx); len(evs) != 0 {
			t.Fatalf("a follower saw %d events before the begin committed", len(evs))
		}
		if _, err := st.CommitEvents(ctx, owner, []store.Event{ev}); err != nil { // the begin's write
			t.Fatal(err)
		}
		w.Begun(nil)
		if err := w.Opened(ctx); err != nil {
			t.Fatalf("Opened after Begun(nil) = %v", err)
		}
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		seqs, _ := follow(l, id, 0, 0, nil)
		wantSeqs(t, seqs, 1, 4)
	})
	t.Run("not begun", func(t *testing.T) {
		st := storetest.SQLite(t)
		g := newGated(st)
		l := newLog(g, owner, quiet(), Options{}, tuning{nudgeWait: time.Millisecond})
		defer closeLog(t, l)
		id := newMessage(t, st, ownLease())
		w := mustOpen(t, l, id, Opening{LastSeq: 1, Committed: []store.Event{first(id)}, Unwritten: true})
		appendThree(t, w)
		w.Begun(errors.New("the session changed"))
		if err := w.Opened(ctx); !errors.Is(err, ErrNotBegun) {
			t.Fatalf("Opened = %v, want ErrNotBegun", err)
		}
		if _, err := w.Append(ctx, events.ContentDelta, delta(4)); !errors.Is(err, ErrNotBegun) {
			t.Fatalf("append after a failed begin = %v, want ErrNotBegun", err)
		}
		if err := w.Wait(ctx); !errors.Is(err, ErrNotBegun) {
			t.Fatalf("Wait = %v, want ErrNotBegun", err)
		}
		if evs, err := st.ListEvents(ctx, id, 0, 0); err != nil || len(evs) != 0 || g.commits.Load() != 0 {
			t.Fatalf("the database holds %d events after %d commits (%v), want none", len(evs), g.commits.Load(), err)
		}
		if _, err := l.Open(id, Opening{}); err != nil {
			t.Fatalf("the message cannot be opened again: %v", err)
		}
	})
}

func TestOutageKeepsEventsAndResumes(t *testing.T) {
	st := storetest.SQLite(t)
	g := newGated(st)
	l := newLog(g, owner, quiet(), Options{}, tuning{retryMin: 5 * time.Millisecond, retryMax: 20 * time.Millisecond, maxPending: 50})
	defer closeLog(t, l)
	id := newMessage(t, st, ownLease())
	w := mustOpen(t, l, id, Opening{})
	ctx := context.Background()
	g.down.Store(true)
	for i := 1; i <= 50; i++ {
		if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if _, err := w.Append(short, events.ContentDelta, delta(51)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append over the pending bound = %v, want it to wait until its context ends", err)
	}
	cancel()
	if _, err := w.Finish(ctx, events.Error, events.ErrorData{Code: failure.Interrupted}, &store.Message{Status: store.StatusInterrupted}); err != nil {
		t.Fatalf("terminal event over the bound: %v (it must always be accepted)", err)
	}
	if since, failing := l.FailingSince(); !failing || time.Since(since) > time.Minute {
		t.Fatalf("FailingSince = %v, %v during the outage", since, failing)
	}
	g.down.Store(false)
	if err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, failing := l.FailingSince(); failing {
		t.Error("still failing after the database came back")
	}
	seqs, ended := follow(l, id, 0, 51, nil)
	if !ended {
		t.Fatal("no terminal event after the outage")
	}
	wantSeqs(t, seqs, 1, 51)
}

func TestLostMessage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		l := New(st, owner, quiet(), Options{})
		defer closeLog(t, l)
		id := newMessage(t, st, store.Lease{Owner: owner, TTL: 20 * time.Millisecond})
		var lost atomic.Bool
		w := mustOpen(t, l, id, Opening{OnLost: func() { lost.Store(true) }})
		ctx := context.Background()
		if _, err := w.Append(ctx, events.ContentDelta, delta(1)); err != nil {
			t.Fatal(err)
		}
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the lease expires; another replica claims it
		other := New(st, "replica-2", quiet(), Options{})
		defer closeLog(t, other)
		claimed, err := st.ClaimOrphans(ctx, store.Lease{Owner: "replica-2", TTL: time.Hour}, false, 10)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim = %v, %v", claimed, err)
		}
		w2 := mustOpen(t, other, id, Opening{LastSeq: claimed[0].LastEventID})

		if _, err := w.Append(ctx, events.ContentDelta, delta(2)); err != nil {
			t.Fatal(err) // accepted locally; the commit finds the message lost
		}
		if err := w.Wait(ctx); !errors.Is(err, ErrLost) || !lost.Load() {
			t.Fatalf("Wait = %v, OnLost called %v; want ErrLost and the producer told", err, lost.Load())
		}
		if _, err := w.Append(ctx, events.ContentDelta, delta(3)); !errors.Is(err, ErrLost) {
			t.Fatalf("append after the loss = %v, want ErrLost", err)
		}
		follower := make(chan []int64, 1)
		go func() { seqs, _ := follow(l, id, 0, 1, nil); follower <- seqs }()
		if _, err := w2.Finish(ctx, events.Error, events.ErrorData{Code: failure.Interrupted}, &store.Message{Status: store.StatusInterrupted}); err != nil {
			t.Fatal(err)
		}
		wantSeqs(t, <-follower, 1, 2) // the old owner's delta 1, then the new owner's terminal
		stored, _ := st.ListEvents(ctx, id, 0, 0)
		if len(stored) != 2 || stored[1].Name != events.Error {
			t.Fatalf("stored log %+v, want delta 1 and the new owner's error", stored)
		}
	})
}

func TestCloseGivesUpOnADeadDatabase(t *testing.T) {
	st := storetest.SQLite(t)
	g := newGated(st)
	l := newLog(g, owner, quiet(), Options{}, tuning{retryMin: 5 * time.Millisecond, retryMax: 10 * time.Millisecond})
	id := newMessage(t, st, ownLease())
	g.down.Store(true)
	w := mustOpen(t, l, id, Opening{})
	if _, err := w.Append(context.Background(), events.ContentDelta, delta(1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := l.Close(ctx); err == nil {
		t.Fatal("Close with an unwritten event = nil, want an error saying so")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v with the database down, want it to give up at its deadline", d)
	}
}

func TestAStalledFollowerDoesNotHoldUpTheProducer(t *testing.T) {
	st := storetest.SQLite(t)
	l := New(st, owner, quiet(), Options{})
	defer closeLog(t, l)
	id := newMessage(t, st, ownLease())
	w := mustOpen(t, l, id, Opening{})
	stalled := l.Follow(id, 0, 0) // reads once, then never again
	if _, _, err := stalled.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	big := events.DeltaData{Delta: string(make([]byte, 64<<10))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// 200 × 64 KiB: r3labs/sse's hub blocks its publisher after 130 such events to one
	// stalled subscriber (docs/dependencies.md); here the follower only costs its own lag.
	for i := 0; i < 200; i++ {
		if _, err := w.Append(ctx, events.ContentDelta, big); err != nil {
			t.Fatalf("append %d blocked behind a stalled follower: %v", i, err)
		}
	}
	if _, err := w.Finish(ctx, events.Error, events.ErrorData{Code: failure.Cancelled}, &store.Message{Status: store.StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestOneWriterPerMessageAndNothingAfterTheEnd(t *testing.T) {
	st := storetest.SQLite(t)
	l := New(st, owner, quiet(), Options{})
	defer closeLog(t, l)
	id := newMessage(t, st, ownLease())
	w := mustOpen(t, l, id, Opening{})
	if _, err := l.Open(id, Opening{}); err == nil {
		t.Fatal("second Open of a live message succeeded; two producers would break positions")
	}
	if _, err := w.Finish(context.Background(), events.Completed, json.RawMessage(`{}`), &store.Message{Status: store.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(context.Background(), events.ContentDelta, delta(1)); !errors.Is(err, ErrEnded) {
		t.Fatalf("append after the terminal event = %v, want ErrEnded", err)
	}
}

func TestCommittedEventsSeedTheStream(t *testing.T) {
	st := storetest.SQLite(t)
	l := New(st, owner, quiet(), Options{})
	defer closeLog(t, l)
	u := &store.Message{UserID: "u"}
	sess := &store.Session{UserID: "u", Phase: "strategy"}
	if err := st.CreateSession(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	u.SessionID = sess.ID
	a := &store.Message{ID: "seeded"}
	queued := store.Event{MessageID: a.ID, Seq: 1, Name: events.Status, Data: store.JSON(`{"state":"queued"}`)}
	if err := st.CreateTurn(context.Background(), u, a, store.TurnStart{Lease: ownLease(), Events: []store.Event{queued}}); err != nil {
		t.Fatal(err)
	}
	w := mustOpen(t, l, a.ID, Opening{LastSeq: 1, Committed: []store.Event{queued}})
	c := l.Follow(a.ID, 0, 1)
	evs, changed, _ := c.Next(context.Background())
	if len(evs) != 1 || evs[0].Seq != 1 || evs[0].Name != events.Status {
		t.Fatalf("follower of a seeded stream got %+v, want the queued event", evs)
	}
	if seq, err := w.Append(context.Background(), events.ContentDelta, delta(1)); err != nil || seq != 2 {
		t.Fatalf("first append after the seed = seq %d, %v; want 2", seq, err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the follower was not woken by the first append")
	}
	if evs, _, _ = c.Next(context.Background()); len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("after the seed the follower got %+v, want the delta at seq 2", evs)
	}
}

// TestRefusedFinish has the store refuse a message's finish (its settlement names another
// user's strategy) in a batch with a delta before it: the producer learns it from Finish, the
// delta is committed all the same, and the error event it appends instead takes the
// refused event's place. No follower ever sees the refused completed event.
func TestRefusedFinish(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		g := newGated(st)
		gate := make(chan struct{})
		g.gate = gate
		l := New(g, owner, quiet(), Options{})
		defer closeLog(t, l)
		released := make(chan struct{})
		defer close(released)
		id := newMessage(t, st, ownLease())
		msg, err := st.GetMessage(ctx, id, "u")
		if err != nil {
			t.Fatal(err)
		}
		sess, err := st.GetSession(ctx, msg.SessionID, "u")
		if err != nil {
			t.Fatal(err)
		}
		bobs := &store.Strategy{UserID: "bob", Name: "bob's"}
		if err := st.UpsertStrategy(ctx, bobs); err != nil {
			t.Fatal(err)
		}
		follower := make(chan []int64, 1)
		go func() {
			seqs, _ := follow(l, id, 0, 0, func(ev store.Event) {
				if ev.Name == events.Completed {
					t.Errorf("a follower saw the refused completed event %d", ev.Seq)
				}
			})
			follower <- seqs
		}()

		w := mustOpen(t, l, id, Opening{})
		if _, err := w.Append(ctx, events.ContentDelta, delta(1)); err != nil {
			t.Fatal(err)
		}
		for g.commits.Load() == 0 { // delta 1's commit waits at the gate: the rest piles up
			time.Sleep(time.Millisecond)
		}
		if _, err := w.Append(ctx, events.ContentDelta, delta(2)); err != nil {
			t.Fatal(err)
		}
		if err := w.record([]store.Trace{trace(1)}); err != nil { // rides with delta 2 and the refused finish
			t.Fatal(err)
		}
		go func() { // delta 1's commit goes on once the rest is appended (Finish waits)
			time.Sleep(20 * time.Millisecond)
			for {
				select {
				case gate <- struct{}{}:
				case <-released:
					return
				}
			}
		}()
		done := &store.Message{Status: store.StatusCompleted, Content: "done",
			Settlement: &store.Settlement{Session: sess, Strategy: &store.Strategy{ID: bobs.ID, UserID: "u", Name: "mine now"}}}
		if _, err := w.Finish(ctx, events.Completed, events.CompletedData{ReplyLen: 2}, done); !errors.Is(err, ErrRefused) {
			t.Fatalf("Finish = %v, want ErrRefused", err)
		}
		seq, err := w.Finish(ctx, events.Error, events.ErrorData{Code: failure.InternalError}, &store.Message{Status: store.StatusFailed})
		if err != nil || seq != 3 {
			t.Fatalf("Finish after the refusal = %d, %v; want seq 3", seq, err)
		}
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		wantSeqs(t, <-follower, 1, 3)
		if traces, err := st.ListTraces(ctx, id, "u", false); err != nil || len(traces) != 1 {
			t.Errorf("traces after the refusal = %+v, %v; want the one recorded, written once by the finish that stood", traces, err)
		}
		stored, _ := st.ListEvents(ctx, id, 0, 0)
		if len(stored) != 3 || stored[2].Name != events.Error {
			t.Fatalf("stored log %+v, want the two deltas and the error", stored)
		}
		if got, _ := st.GetStrategy(ctx, bobs.ID, "bob"); got.Name != "bob's" {
			t.Errorf("bob's strategy changed: %+v", got)
		}
	})
}

// storedTraces counts the traces the database has of message id.
func storedTraces(t *testing.T, st *store.Store, id string) int {
	t.Helper()
	got, err := st.ListTraces(context.Background(), id, "u", false)
	if err != nil {
		t.Fatal(err)
	}
	return len(got)
}

func trace(seq int) store.Trace {
	return store.Trace{Attempt: 1, Seq: seq, Method: "POST", URL: "http://up/v1/responses", Body: fmt.Sprintf(`{"n":%d}`, seq)}
}

// TestRecordedTracesRideWithTheNextCommit: traces handed to the log are written with the
// message's next commit, never with one that already happened (a turn records its request
// once the first delta is committed, so the trace never delays it); through an outage they
// are written once; after the terminal event the log takes none. Their wait is long
// here, so no trace is written alone (TestRecordedTracesWithNothingToRideWithAreWrittenAlone).
func TestRecordedTracesRideWithTheNextCommit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		g := newGated(st)
		l := newLog(g, owner, quiet(), Options{}, tuning{retryMin: 5 * time.Millisecond, retryMax: 20 * time.Millisecond, traceWait: time.Hour})
		defer closeLog(t, l)
		id := newMessage(t, st, ownLease())
		w := mustOpen(t, l, id, Opening{})
		stored := func() int { t.Helper(); return storedTraces(t, st, id) }
		appendDelta := func(i int) {
			t.Helper()
			if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
				t.Fatal(err)
			}
			if err := w.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}

		appendDelta(1)
		if err := w.record([]store.Trace{trace(1)}); err != nil {
			t.Fatal(err)
		}
		if n := stored(); n != 0 {
			t.Fatalf("%d traces stored before another commit, want 0", n)
		}
		appendDelta(2)
		if n := stored(); n != 1 {
			t.Fatalf("%d traces stored after the next commit, want 1", n)
		}

		if err := w.record([]store.Trace{trace(2)}); err != nil {
			t.Fatal(err)
		}
		g.down.Store(true)
		if _, err := w.Append(ctx, events.ContentDelta, delta(3)); err != nil {
			t.Fatal(err)
		}
		for g.commits.Load() < 5 { // a few failed tries
			time.Sleep(time.Millisecond)
		}
		g.down.Store(false)
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if n := stored(); n != 2 {
			t.Fatalf("%d traces stored after an outage, want 2 (each once)", n)
		}
		g.mu.Lock()
		traced := slices.Clone(g.traced)
		g.mu.Unlock()
		if !slices.Equal(traced, []int64{2, 3}) {
			t.Errorf("traces rode with events %v, want [2 3]", traced)
		}

		if _, err := w.Finish(ctx, events.Completed, events.CompletedData{ReplyLen: 3}, &store.Message{Status: store.StatusCompleted}); err != nil {
			t.Fatal(err)
		}
		if err := w.record([]store.Trace{trace(3)}); !errors.Is(err, ErrEnded) {
			t.Fatalf("Record after the terminal event = %v, want ErrEnded", err)
		}
	})
}

// TestRecordedTracesWithNothingToRideWithAreWrittenAlone: traces recorded after the last
// event appended (a turn's request, recorded once its first delta is out, while a slow model
// pauses) are written on their own once their wait is over, so a generation does not hold
// them; through an outage they are written once, and for a message another replica took
// over they are dropped, not written.
func TestRecordedTracesWithNothingToRideWithAreWrittenAlone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		g := newGated(st)
		l := newLog(g, owner, quiet(), Options{}, tuning{retryMin: 5 * time.Millisecond, retryMax: 20 * time.Millisecond, traceWait: 10 * time.Millisecond})
		defer closeLog(t, l)
		id := newMessage(t, st, store.Lease{Owner: owner, TTL: 300 * time.Millisecond})
		w := mustOpen(t, l, id, Opening{})
		stored := func() int { t.Helper(); return storedTraces(t, st, id) }
		waitStored := func(want int) {
			t.Helper()
			for deadline := time.Now().Add(5 * time.Second); stored() < want; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d traces stored after 5 s, want %d", stored(), want)
				}
			}
		}
		if _, err := w.Append(ctx, events.ContentDelta, delta(1)); err != nil {
			t.Fatal(err)
		}
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		commits := g.commits.Load()

		if err := w.record([]store.Trace{trace(1)}); err != nil {
			t.Fatal(err)
		}
		waitStored(1)
		if n := g.commits.Load(); n != commits {
			t.Errorf("%d commits of events for a trace alone, want none", n-commits)
		}

		g.down.Store(true)
		tries := g.alone.Load()
		if err := w.record([]store.Trace{trace(2)}); err != nil {
			t.Fatal(err)
		}
		for g.alone.Load() < tries+3 { // a few failed tries
			time.Sleep(time.Millisecond)
		}
		g.down.Store(false)
		waitStored(2)

		time.Sleep(350 * time.Millisecond) // the lease expires; another replica claims it
		claimed, err := st.ClaimOrphans(ctx, store.Lease{Owner: "replica-2", TTL: time.Hour}, false, 10)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim = %v, %v", claimed, err)
		}
		tries = g.alone.Load()
		if err := w.record([]store.Trace{trace(3)}); err != nil {
			t.Fatal(err)
		}
		for g.alone.Load() == tries {
			time.Sleep(time.Millisecond)
		}
		closeLog(t, l) // what it tried is over
		if n := stored(); n != 2 {
			t.Errorf("%d traces stored, want 2: none for a message another replica took over", n)
		}
	})
}

// followWaking is follow for a follower that waits without a goroutine of its own
// (Cursor.NextFunc), which reads again before it waits (a heartbeat) as a detached stream
// does.
func followWaking(l *Log, id string, after, last int64) ([]int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur := l.Follow(id, after, last)
	woken := make(chan struct{}, 1)
	wake := func() {
		select {
		case woken <- struct{}{}:
		default:
		}
	}
	var seqs []int64
	for ctx.Err() == nil && !cur.Ended() {
		for range 2 {
			evs, _ := cur.NextFunc(ctx, wake)
			for _, ev := range evs {
				seqs = append(seqs, ev.Seq)
			}
		}
		if cur.Ended() {
			break
		}
		select {
		case <-woken:
		case <-ctx.Done():
		}
	}
	return seqs, cur.Ended()
}

// A follower that waits without a goroutine sees what one on a channel sees: a message
// produced here, read from memory; another replica's, read from the database and woken by
// a notification or else by the poll; and a message that has ended.
func TestFollowingWithoutAGoroutine(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		l := New(st, owner, quiet(), Options{})
		defer closeLog(t, l)
		polling := newLog(st, "replica-2", quiet(), Options{}, tuning{pollInterval: 20 * time.Millisecond})
		defer closeLog(t, polling)
		notified := newLog(st, "replica-3", quiet(), Options{}, tuning{pollInterval: time.Hour})
		defer closeLog(t, notified)
		cases := []struct {
			name     string
			follower *Log
			notify   bool
		}{
			{"produced here", l, false},
			{"another replica's, polled", polling, false},
			{"another replica's, notified", notified, true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				id := newMessage(t, st, ownLease())
				w := mustOpen(t, l, id, Opening{})
				results := make(chan []int64, 1)
				go func() {
					seqs, _ := followWaking(tc.follower, id, 0, 0)
					results <- seqs
				}()
				ctx := context.Background()
				for i := 1; i <= 20; i++ {
					if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
						t.Fatal(err)
					}
					if i%5 == 0 { // a few commits, each announced
						if err := w.Wait(ctx); err != nil {
							t.Fatal(err)
						}
						if tc.notify {
							tc.follower.Notify(id)
						}
					}
				}
				done := &store.Message{Status: store.StatusCompleted, Content: "done"}
				if _, err := w.Finish(ctx, events.Completed, events.CompletedData{ReplyLen: 20}, done); err != nil {
					t.Fatal(err)
				}
				if err := w.Wait(ctx); err != nil {
					t.Fatal(err)
				}
				if tc.notify {
					tc.follower.Notify(id)
				}
				wantSeqs(t, <-results, 1, 21)
				seqs, ended := followWaking(tc.follower, id, 10, 21) // after the end
				if !ended {
					t.Fatal("a follower of an ended message did not reach its end")
				}
				wantSeqs(t, seqs, 11, 21)
			})
		}
	})
}

// A wake is armed once per change: a follower that reads again before anything changed (a
// heartbeat) is woken once, not once per read.
func TestAWakeIsArmedOncePerChange(t *testing.T) {
	st := storetest.SQLite(t)
	l := New(st, owner, quiet(), Options{})
	defer closeLog(t, l)
	other := newLog(st, "replica-2", quiet(), Options{}, tuning{pollInterval: time.Hour})
	defer closeLog(t, other)
	id := newMessage(t, st, ownLease())
	w := mustOpen(t, l, id, Opening{})
	ctx := context.Background()
	for _, follower := range []*Log{l, other} {
		var wakes atomic.Int64
		cur := follower.Follow(id, 0, 0)
		for range 3 {
			if _, err := cur.NextFunc(ctx, func() { wakes.Add(1) }); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Append(ctx, events.ContentDelta, delta(1)); err != nil {
			t.Fatal(err)
		}
		if err := w.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		other.Notify(id)
		time.Sleep(50 * time.Millisecond) // the wakes are called after the commit is published
		if n := wakes.Load(); n != 1 {
			t.Fatalf("follower on %s woken %d times by one change, want once", follower.Owner(), n)
		}
	}
}

// A follower on another replica is woken by PostgreSQL's notification of each commit (its
// poll is an hour here): its cursor has the message watched before it reads
// (store.Watch), and the owner's commits of a watched message notify. A follower of a
// message produced here needs no notification, and the commits of a message nobody else
// follows send none.
func TestAFollowerElsewhereIsNotified(t *testing.T) {
	st := storetest.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	notes, err := st.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := New(st, owner, quiet(), Options{})
	defer closeLog(t, l)
	other := newLog(st, "replica-2", quiet(), Options{}, tuning{pollInterval: time.Hour})
	defer closeLog(t, other)
	var heard sync.WaitGroup
	var notified sync.Map // message id → true
	heard.Go(func() {
		for n := range notes {
			notified.Store(n.MessageID, true)
			other.Notify(n.MessageID)
		}
	})
	defer func() { cancel(); heard.Wait() }()

	unfollowed := newMessage(t, st, ownLease())
	produce(t, l, unfollowed, 2)
	id := newMessage(t, st, ownLease())
	w := mustOpen(t, l, id, Opening{})
	cur := other.Follow(id, 0, 0)
	if _, _, err := cur.Next(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		_, changed, err := cur.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("delta %d: the follower on replica-2 was not woken", i)
		}
	}
	if _, ok := notified.Load(unfollowed); ok {
		t.Error("the commits of a message nobody followed elsewhere were notified")
	}
}

// TestALongMessageKeepsOnlyItsTailInMemory: a message produced here keeps only its last
// committed events in memory; followers that start behind them, that fall behind while it
// streams, or that keep up, all receive every event once, in order, from the database
// where memory has let them go.
func TestALongMessageKeepsOnlyItsTailInMemory(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		const keep = 8
		l := newLog(st, owner, quiet(), Options{}, tuning{keepCommitted: keep, pollInterval: 5 * time.Millisecond})
		defer closeLog(t, l)
		id := newMessage(t, st, ownLease())
		results := make(chan []int64, 2)
		go func() { seqs, _ := follow(l, id, 0, 0, nil); results <- seqs }()
		go func() { // a slow follower, always behind the window
			seqs, _ := follow(l, id, 0, 0, func(store.Event) { time.Sleep(100 * time.Microsecond) })
			results <- seqs
		}()
		w := produce(t, l, id, 600)
		for range 2 {
			wantSeqs(t, <-results, 1, 601)
		}
		s := w.s
		s.mu.Lock()
		held, base := len(s.events), s.base
		s.mu.Unlock()
		if held >= 2*keep || base < 600-2*keep {
			t.Fatalf("the stream holds %d events from seq %d on, want fewer than %d", held, base+1, 2*keep)
		}
		seqs, _ := follow(l, id, 3, 601, nil) // a reconnect far behind, after the end
		wantSeqs(t, seqs, 4, 601)
	})
}
