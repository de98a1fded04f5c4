package turnlog

import (
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// ev is a logged event with data encoded as the log stores it.
func ev(t *testing.T, seq int64, name string, data any) store.Event {
	t.Helper()
	b, err := events.Encode(data)
	if err != nil {
		t.Fatal(err)
	}
	return store.Event{Seq: seq, Name: name, Data: b}
}

func intp(n int) *int { return &n }

// A corrected turn reads as: the first attempt's text, its refusal, the second's text and
// the end; the text is split into reasoning and answer whatever the deltas' cuts.
func TestReaderCorrectedTurn(t *testing.T) {
	r := NewReader()
	var got []Happening
	for _, e := range []store.Event{
		ev(t, 1, events.Status, events.StatusData{State: events.StateWorking}),
		ev(t, 2, events.ContentDelta, events.DeltaData{Seq: 1, Delta: "<thinking>first</thi"}),
		ev(t, 3, events.ContentDelta, events.DeltaData{Seq: 2, Delta: "nking><final>bad"}),
		ev(t, 4, events.Status, events.StatusData{State: events.StateRetrying, Attempt: 2, DiscardThroughSeq: intp(2)}),
		ev(t, 5, events.ContentDelta, events.DeltaData{Seq: 3, Delta: "<thinking>second</thinking><fin", Attempt: 2}),
		ev(t, 6, events.ContentDelta, events.DeltaData{Seq: 4, Delta: "al>good</final>", Attempt: 2}),
		ev(t, 7, events.Completed, events.CompletedData{ReplyLen: 10, Metadata: []byte(`{"phase":"strategy","attempts":2}`)}),
	} {
		hs, err := r.Read(e)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, hs...)
	}
	want := []struct {
		kind    Kind
		attempt int
		text    string
	}{
		{Status, 1, ""}, {Reasoning, 1, "first"}, {Answer, 1, "bad"}, {Refused, 1, ""}, {Status, 2, ""},
		{Reasoning, 2, "second"}, {Answer, 2, "good"}, {Completed, 2, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d happenings, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Kind != w.kind || got[i].Attempt != w.attempt || got[i].Text != w.text {
			t.Errorf("happening %d = %v/%d %q, want %v/%d %q", i, got[i].Kind, got[i].Attempt, got[i].Text, w.kind, w.attempt, w.text)
		}
	}
	if md := got[len(got)-1].Metadata; md == nil || md.Attempts != 2 || md.Phase != "strategy" {
		t.Errorf("completed metadata = %+v", md)
	}
}

// A failed turn carries the answer of the server's fallback reply; a log it cannot read is
// an error, not a guess.
func TestReaderFailed(t *testing.T) {
	r := NewReader()
	hs, err := r.Read(ev(t, 1, events.Error, events.ErrorData{Code: "provider_error", Message: "m",
		Fallback: "<thinking>x</thinking><final>The answer was cut off; ask again.</final>"}))
	if err != nil || len(hs) != 1 || hs[0].Kind != Failed || hs[0].FallbackAnswer != "The answer was cut off; ask again." {
		t.Fatalf("Read = %+v, %v", hs, err)
	}
	if _, err := r.Read(store.Event{Seq: 2, Name: events.ContentDelta, Data: []byte(`{"delta":`)}); err == nil {
		t.Fatal("a broken delta read without error")
	}
	if hs, err := r.Read(store.Event{Seq: 3, Name: "heartbeat"}); err != nil || hs != nil {
		t.Fatalf("an event of no meaning = %+v, %v", hs, err)
	}
}
