package lease

import (
	"context"
	"errors"
	"github.com/lib/pq"
	"io"
	"log/slog"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/phaseflow/phaseflow/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeStore answers renewals from a table of what the database holds.
type fakeStore struct {
	mu        sync.Mutex
	held      map[string]bool // message id → still owned and running
	cancelled map[string]bool
	orphans   []store.Message
	down      bool
	refuse    error // returned by every renewal when set: the database refused it
	renewed   int
	asked     []string // the ids of the last renewal
}

func (f *fakeStore) RenewLeases(_ context.Context, _ store.Lease, ids []string) ([]store.LeaseState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, syscall.ECONNREFUSED
	}
	if f.refuse != nil {
		return nil, f.refuse
	}
	f.renewed++
	f.asked = slices.Clone(ids)
	var out []store.LeaseState
	for _, id := range ids {
		if f.held[id] {
			out = append(out, store.LeaseState{MessageID: id, CancelRequested: f.cancelled[id]})
		}
	}
	return out, nil
}

func (f *fakeStore) ClaimOrphans(_ context.Context, _ store.Lease, _ bool, limit int) ([]store.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, syscall.ECONNREFUSED
	}
	n := min(limit, len(f.orphans))
	out := f.orphans[:n]
	f.orphans = f.orphans[n:]
	return out, nil
}

func (f *fakeStore) RequestCancel(_ context.Context, id, _ string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.held[id] {
		return "", store.ErrMessageFinished
	}
	f.cancelled[id] = true
	return "me", nil
}

// healthy is an event log that never fails.
type healthy struct{ since time.Time }

func (h healthy) FailingSince() (time.Time, bool) { return h.since, !h.since.IsZero() }

// turns registers fake turns and records the causes they were stopped with.
type turns struct {
	mu     sync.Mutex
	causes map[string]error
}

func (tr *turns) track(k *Keeper, ids ...string) {
	for _, id := range ids {
		k.Track(id, func(cause error) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			if tr.causes[id] == nil {
				tr.causes[id] = cause
			}
		})
	}
}

func (tr *turns) cause(id string) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.causes[id]
}

func newKeeper(st *fakeStore, h Health, end EndFunc) (*Keeper, *turns) {
	if end == nil {
		end = func(context.Context, *store.Message) error { return nil }
	}
	k := New(Config{Owner: "me", TTL: 3 * time.Second, OutageGrace: 10 * time.Second}, st, h, end,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	return k, &turns{causes: map[string]error{}}
}

func TestRenewal(t *testing.T) {
	st := &fakeStore{held: map[string]bool{"a": true, "c": true}, cancelled: map[string]bool{"c": true}}
	k, tr := newKeeper(st, healthy{}, nil)
	tr.track(k, "a", "b", "c", "d")
	k.Ending("d")
	k.renew(context.Background())
	cases := []struct {
		id   string
		want error
	}{
		{"a", nil},          // still held: left alone
		{"b", ErrLost},      // missing from the answer: another replica has it
		{"c", ErrCancelled}, // held, with its cancel flag set through another replica
		{"d", nil},          // missing, but its terminal event is handed over: it ended
	}
	for _, tc := range cases {
		if got := tr.cause(tc.id); !errors.Is(got, tc.want) {
			t.Errorf("turn %s stopped with %v, want %v", tc.id, got, tc.want)
		}
	}
	slices.Sort(st.asked)
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(st.asked, want) {
		t.Errorf("renewed %v, want %v: an ending turn keeps its lease until it is untracked", st.asked, want)
	}
}

func TestRenewalOfNothingTouchesNothing(t *testing.T) {
	st := &fakeStore{}
	k, _ := newKeeper(st, healthy{}, nil)
	k.renew(context.Background())
	if st.renewed != 0 {
		t.Fatalf("renewed %d times with no turns running, want 0", st.renewed)
	}
}

func TestOutageGrace(t *testing.T) {
	cases := []struct {
		name    string
		since   time.Duration // how long the event log has been failing; 0: not failing
		renewal bool          // whether the keeper's own renewal fails
		want    error
	}{
		{"healthy", 0, false, nil},
		{"short outage seen by the log", 5 * time.Second, false, nil},
		{"outage past the grace seen by the log", 11 * time.Second, false, ErrOutage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h healthy
			if tc.since > 0 {
				h.since = time.Now().Add(-tc.since)
			}
			k, tr := newKeeper(&fakeStore{held: map[string]bool{"a": true}}, h, nil)
			tr.track(k, "a")
			k.enforceGrace()
			if got := tr.cause("a"); !errors.Is(got, tc.want) {
				t.Fatalf("turn stopped with %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAFailedRenewalStartsTheGraceClock(t *testing.T) {
	st := &fakeStore{held: map[string]bool{"a": true}, down: true}
	k, tr := newKeeper(st, healthy{}, nil)
	now := time.Now()
	k.now = func() time.Time { return now }
	tr.track(k, "a")
	k.renew(context.Background())
	k.enforceGrace()
	if tr.cause("a") != nil {
		t.Fatal("stopped at the first failed renewal, want the grace waited out")
	}
	now = now.Add(11 * time.Second)
	k.enforceGrace()
	if got := tr.cause("a"); !errors.Is(got, ErrOutage) {
		t.Fatalf("after the grace: %v, want ErrOutage", got)
	}
}

func TestSweepWaitsForAWholeHealthyLease(t *testing.T) {
	k, _ := newKeeper(&fakeStore{}, healthy{}, nil)
	now := time.Now()
	k.now = func() time.Time { return now }
	if k.maySweep() {
		t.Fatal("a replica that just started may sweep; it must wait one TTL")
	}
	now = now.Add(3 * time.Second)
	if !k.maySweep() {
		t.Fatal("a replica healthy for a TTL may not sweep")
	}
	k.failed(&pq.Error{Code: "40P01"}) // a deadlock the database broke: it is up
	if !k.maySweep() {
		t.Fatal("a refused statement held back the sweep; the database answered")
	}
	k.failed(syscall.ECONNREFUSED)
	if k.maySweep() {
		t.Fatal("a replica that just saw the database fail may sweep; owners must get to renew first")
	}
}

// TestARefusedRenewalIsNoOutage: PostgreSQL broke a deadlock by failing the renewal. The
// database is up; the grace clock must not start, or a turn running a grace later would be
// stopped as if it had been down all along (seen in a loadbench sweep).
func TestARefusedRenewalIsNoOutage(t *testing.T) {
	st := &fakeStore{held: map[string]bool{"a": true}, refuse: &pq.Error{Code: "40P01", Message: "deadlock detected"}}
	k, tr := newKeeper(st, healthy{}, nil)
	now := time.Now()
	k.now = func() time.Time { return now }
	tr.track(k, "a")
	k.renew(context.Background())
	now = now.Add(11 * time.Second)
	k.enforceGrace()
	if got := tr.cause("a"); got != nil {
		t.Fatalf("a grace after a refused renewal the turn stopped with %v, want it running", got)
	}
}

// TestAnOutageEndsWithItsTurns: the database was down while turns ran, they ended, and it
// came back. The next turn, started a grace later, must not be stopped for the old outage
// before any renewal of its own has run.
func TestAnOutageEndsWithItsTurns(t *testing.T) {
	st := &fakeStore{held: map[string]bool{"a": true, "b": true}, down: true}
	k, tr := newKeeper(st, healthy{}, nil)
	now := time.Now()
	k.now = func() time.Time { return now }
	tr.track(k, "a")
	k.renew(context.Background()) // fails: the outage begins
	k.Untrack("a")
	st.mu.Lock()
	st.down = false
	st.mu.Unlock()
	now = now.Add(11 * time.Second)
	k.renew(context.Background()) // nothing to renew
	tr.track(k, "b")
	k.enforceGrace()
	if got := tr.cause("b"); got != nil {
		t.Fatalf("a turn started after the outage stopped with %v, want it running", got)
	}
}

func TestRecoverEndsEveryOrphan(t *testing.T) {
	var orphans []store.Message
	for _, id := range []string{"o1", "o2", "o3"} {
		orphans = append(orphans, store.Message{ID: id})
	}
	for i := range 20 { // more than one claim batch
		orphans = append(orphans, store.Message{ID: "x" + string(rune('a'+i))})
	}
	var ended []string
	k, _ := newKeeper(&fakeStore{orphans: orphans}, healthy{}, func(_ context.Context, m *store.Message) error {
		ended = append(ended, m.ID)
		return nil
	})
	n, err := k.Recover(context.Background())
	if err != nil || n != len(orphans) || len(ended) != len(orphans) {
		t.Fatalf("Recover = %d, %v (ended %d), want all %d", n, err, len(ended), len(orphans))
	}
}

func TestCancel(t *testing.T) {
	st := &fakeStore{held: map[string]bool{"a": true}, cancelled: map[string]bool{}}
	k, tr := newKeeper(st, healthy{}, nil)
	tr.track(k, "a")
	if err := k.Cancel(context.Background(), "a", "u"); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(tr.cause("a"), ErrCancelled) {
		t.Fatalf("local turn stopped with %v, want ErrCancelled", tr.cause("a"))
	}
	if err := k.Cancel(context.Background(), "done", "u"); !errors.Is(err, store.ErrMessageFinished) {
		t.Fatalf("cancel of a finished message = %v, want ErrMessageFinished", err)
	}
	k.Notified(store.Notification{MessageID: "b", Cancel: true}) // not running here: nothing happens
}

func TestRunStopsWithItsContext(t *testing.T) {
	k, _ := newKeeper(&fakeStore{}, healthy{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	k.Notified(store.Notification{Resync: true})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
