package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

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

// countingStore counts database round trips for appends.
type countingStore struct {
	*store.Store
	appends atomic.Int64
}

func (c *countingStore) AppendEvents(ctx context.Context, evs []store.Event) error {
	c.appends.Add(1)
	return c.Store.AppendEvents(ctx, evs)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newMessage makes a session and an assistant message for the log to belong to.
func newMessage(t *testing.T, st *store.Store) string {
	t.Helper()
	ctx := context.Background()
	sess := &store.Session{ID: fmt.Sprintf("s-%d", time.Now().UnixNano()), UserID: "u", Locale: "en", Phase: "strategy", Status: "active"}
	if err := st.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	user := &store.Message{ID: sess.ID + "-u", SessionID: sess.ID, UserID: "u", Role: "user", Status: store.StatusCompleted, Content: "hi"}
	asst := &store.Message{ID: sess.ID + "-a", SessionID: sess.ID, UserID: "u", Role: "assistant", Status: store.StatusPending}
	if err := st.CreateTurn(ctx, user, asst); err != nil {
		t.Fatal(err)
	}
	return asst.ID
}

func delta(i int) events.DeltaData { return events.DeltaData{Seq: i, Delta: fmt.Sprintf("d%d ", i)} }

// produce appends n deltas and a completed event, then closes the writer.
func produce(t *testing.T, l *Log, id string, n int) {
	t.Helper()
	ctx := context.Background()
	w, err := l.Open(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Append(ctx, events.Completed, events.CompletedData{ReplyLen: n}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// drain follows a message from after to its terminal event and returns the seqs seen.
func drain(t *testing.T, l *Log, id string, after int64) []int64 {
	t.Helper()
	seqs, ended := drainNoFatal(l, id, after)
	if !ended {
		t.Fatalf("follower stuck after %d events", len(seqs))
	}
	return seqs
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

func TestLiveFollowersSeeEveryEventOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		l := New(st, quiet(), Options{})
		defer l.Close()
		id := newMessage(t, st)
		w, err := l.Open(id, 0)
		if err != nil {
			t.Fatal(err)
		}
		results := make(chan []int64, 2)
		for _, after := range []int64{0, 0} {
			go func() { seqs, _ := drainNoFatal(l, id, after); results <- seqs }()
		}
		ctx := context.Background()
		for i := 1; i <= 200; i++ {
			if _, err := w.Append(ctx, events.ContentDelta, delta(i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Append(ctx, events.Completed, events.CompletedData{}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			wantSeqs(t, <-results, 1, 201)
		}
	})
}

// drainNoFatal is drain for goroutines, which must not call t.Fatal; it also reports
// whether the terminal event was reached within its time limit.
func drainNoFatal(l *Log, id string, after int64) ([]int64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur := l.Follow(id, after)
	var seqs []int64
	for !cur.Ended() && ctx.Err() == nil {
		evs, wait, err := cur.Next(ctx)
		if err != nil {
			return seqs, false
		}
		for _, ev := range evs {
			seqs = append(seqs, ev.Seq)
		}
		if !cur.Ended() {
			select {
			case <-wait:
			case <-ctx.Done():
			}
		}
	}
	return seqs, cur.Ended()
}

func TestReplayFromDatabaseAfterTheStreamEnded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		l := New(st, quiet(), Options{})
		defer l.Close()
		id := newMessage(t, st)
		produce(t, l, id, 1200) // more than two pages
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
				wantSeqs(t, drain(t, l, id, tc.after), tc.after+1, 1201)
			})
		}
		var got []store.Event
		evs, err := st.ListEvents(context.Background(), id, 1200, 10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, evs...)
		if len(got) != 1 || got[0].Name != events.Completed {
			t.Fatalf("last stored event = %+v, want the completed event", got)
		}
	})
}

func TestAppendsAreBatched(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		cs := &countingStore{Store: st}
		l := New(cs, quiet(), Options{FlushInterval: 20 * time.Millisecond})
		defer l.Close()
		id := newMessage(t, st)
		produce(t, l, id, 1000)
		if n := cs.appends.Load(); n > 100 {
			t.Fatalf("1001 events took %d database round trips, want batching (≤100)", n)
		}
	})
}

func TestAStalledFollowerDoesNotHoldUpTheProducer(t *testing.T) {
	st := storetest.SQLite(t)
	l := New(st, quiet(), Options{})
	defer l.Close()
	id := newMessage(t, st)
	w, err := l.Open(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	stalled := l.Follow(id, 0) // reads once, then never again
	if _, _, err := stalled.Next(context.Background()); err != nil {
		t.Fatal(err)
	}
	big := events.DeltaData{Delta: string(make([]byte, 64<<10))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// 200 × 64 KiB: r3labs/sse's hub blocks its publisher after 130 such events to one
	// stalled subscriber (go-deps.md); here the follower only costs its own lag.
	for i := 0; i < 200; i++ {
		if _, err := w.Append(ctx, events.ContentDelta, big); err != nil {
			t.Fatalf("append %d blocked behind a stalled follower: %v", i, err)
		}
	}
	if _, err := w.Append(ctx, events.Error, events.ErrorData{Code: events.CodeCancelled}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSecondWriterForALiveMessageIsRefused(t *testing.T) {
	st := storetest.SQLite(t)
	l := New(st, quiet(), Options{})
	defer l.Close()
	id := newMessage(t, st)
	w, err := l.Open(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Open(id, 0); err == nil {
		t.Fatal("second Open of a live message succeeded; two producers would break positions")
	}
	if _, err := w.Append(context.Background(), events.Completed, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(context.Background(), events.ContentDelta, delta(1)); err == nil {
		t.Fatal("append after the terminal event succeeded")
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
