package events

import (
	"encoding/json"
	"testing"
)

// mustEncode is Encode for values that cannot fail to encode.
func mustEncode(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncode: one line of JSON, replies' markup left as it is, and an error for a payload
// that cannot be encoded.
func TestEncode(t *testing.T) {
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"a delta keeps its markup", &DeltaData{Base: Base{MessageID: "m", RequestID: "r"}, Seq: 1, Delta: "<final>a & b</final>\n"},
			`{"message_id":"m","request_id":"r","seq":1,"delta":"<final>a & b</final>\n"}`},
		{"a second attempt says so", &DeltaData{Seq: 7, Delta: "x", Attempt: 2}, `{"message_id":"","request_id":"","seq":7,"delta":"x","attempt":2}`},
		{"a status leaves out what it does not set", &StatusData{State: StateQueued, Phase: "strategy"},
			`{"message_id":"","request_id":"","state":"queued","phase":"strategy"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(mustEncode(t, tc.v)); got != tc.want {
				t.Fatalf("Encode =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
	if _, err := Encode(map[string]any{"bad": make(chan int)}); err == nil {
		t.Fatal("a payload that cannot be encoded encoded")
	}
}

// BenchmarkEncodeDelta is the encoding of most of a turn's events.
func BenchmarkEncodeDelta(b *testing.B) {
	d := &DeltaData{Base: Base{MessageID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", RequestID: "req-1"}, Seq: 42, Delta: "the next <b>few</b> words"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(d); err != nil {
			b.Fatal(err)
		}
	}
}
