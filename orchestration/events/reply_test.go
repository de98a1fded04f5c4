package events

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

func TestReplyDropsTheRefusedAttempt(t *testing.T) {
	cases := []struct {
		name string
		evs  []store.Event
		want string
	}{
		{"seq goes on across attempts", []store.Event{
			{Name: ContentDelta, Data: store.JSON(`{"seq":1,"delta":"bad "}`)},
			{Name: ContentDelta, Data: store.JSON(`{"seq":2,"delta":"reply"}`)},
			{Name: Status, Data: store.JSON(`{"state":"retrying","attempt":2,"discard_through_seq":2}`)},
			{Name: Status, Data: store.JSON(`{"state":"routed"}`)},
			{Name: ContentDelta, Data: store.JSON(`{"seq":3,"delta":"good ","attempt":2}`)},
			{Name: ContentDelta, Data: store.JSON(`{"seq":4,"delta":"reply","attempt":2}`)},
		}, "good reply"},
		{"a log from before discard_through_seq restarts seq", []store.Event{
			{Name: ContentDelta, Data: store.JSON(`{"seq":1,"delta":"bad "}`)},
			{Name: Status, Data: store.JSON(`{"state":"retrying","attempt":2}`)},
			{Name: ContentDelta, Data: store.JSON(`{"seq":1,"delta":"good ","attempt":2}`)},
			{Name: ContentDelta, Data: store.JSON(`{"seq":2,"delta":"reply","attempt":2}`)},
		}, "good reply"},
		{"a refused attempt without text", []store.Event{
			{Name: Status, Data: store.JSON(`{"state":"retrying","attempt":2,"discard_through_seq":0}`)},
			{Name: ContentDelta, Data: store.JSON(`{"seq":1,"delta":"only","attempt":2}`)},
		}, "only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Reply
			for _, ev := range tc.evs {
				r.Add(ev)
			}
			if got := r.String(); got != tc.want {
				t.Fatalf("Reply = %q, want %q", got, tc.want)
			}
		})
	}
}

// appender keeps what an emitter writes, as the log would.
type appender struct{ evs []store.Event }

func (a *appender) add(name string, data any) (int64, error) {
	b, err := Encode(data)
	if err != nil {
		return 0, err
	}
	a.evs = append(a.evs, store.Event{Seq: int64(len(a.evs) + 1), Name: name, Data: b})
	return int64(len(a.evs)), nil
}

func (a *appender) Append(_ context.Context, name string, data any) (int64, error) {
	return a.add(name, data)
}

func (a *appender) AppendWithStatus(_ context.Context, name string, data any, _ string) (int64, error) {
	return a.add(name, data)
}

func (a *appender) Finish(_ context.Context, name string, data any, _ *store.Message) (int64, error) {
	return a.add(name, data)
}

// TestEmitterNumbersDeltasAcrossAttempts plays a retried turn through the emitter and reads
// it as the two kinds of client the contract names: one that ignores status events and
// joins deltas by seq (it gets both attempts, in order), and one that honours
// discard_through_seq (it gets the kept attempt only).
func TestEmitterNumbersDeltasAcrossAttempts(t *testing.T) {
	a := &appender{}
	e := NewEmitter(a, Base{MessageID: "m", RequestID: "r"}, Route{})
	ctx := context.Background()
	for _, d := range []string{"bad ", "reply"} {
		if err := e.Delta(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Retrying(ctx, 2, "malformed_xml"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"good ", "reply"} {
		if err := e.Delta(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []int
	var plain strings.Builder
	var retry StatusData
	for _, ev := range a.evs {
		switch ev.Name {
		case ContentDelta:
			var d DeltaData
			_ = json.Unmarshal(ev.Data, &d)
			if len(seqs) >= 2 && d.Attempt != 2 {
				t.Errorf("second-attempt delta %s lacks attempt 2", ev.Data)
			}
			seqs = append(seqs, d.Seq)
			plain.WriteString(d.Delta)
		case Status:
			_ = json.Unmarshal(ev.Data, &retry)
		}
	}
	if want := []int{1, 2, 3, 4}; !slices.Equal(seqs, want) {
		t.Fatalf("seqs %v, want %v (never reused across attempts)", seqs, want)
	}
	if retry.DiscardThroughSeq == nil || *retry.DiscardThroughSeq != 2 || retry.Attempt != 2 {
		t.Fatalf("retrying %+v, want attempt 2 with discard_through_seq 2", retry)
	}
	if plain.String() != "bad replygood reply" {
		t.Fatalf("a client ignoring status got %q, want both attempts in order", plain.String())
	}
	var r Reply
	for _, ev := range a.evs {
		r.Add(ev)
	}
	if r.String() != "good reply" {
		t.Fatalf("a client honouring discard_through_seq got %q", r.String())
	}
}

func (a *appender) Trace(int, int, upstream.Sent) {}

// fullLog is a log with no room: appends wait for ctx, as eventlog.Writer does while the
// database is down.
type fullLog struct{ appender }

func (f *fullLog) Append(ctx context.Context, _ string, _ any) (int64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// A turn cancelled (or shut down) while the database is down must not stay stuck in a
// write: the emitter hands the turn's context to the log.
func TestEmitterWritesStopWithTheTurn(t *testing.T) {
	e := NewEmitter(&fullLog{}, Base{MessageID: "m", RequestID: "r"}, Route{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Delta(ctx, "text") }()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Delta on a full log after cancel = nil, want the context's error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Delta still waiting 5 s after the turn was cancelled")
	}
}
