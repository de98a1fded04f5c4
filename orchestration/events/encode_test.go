package events

import (
	"encoding/json"
	"testing"
)

// checkAsEncodingJSON asks that Encode writes v as encoding/json does (Encode's form:
// HTML escaping off, no newline), the oracle the hand-written encoders are held to.
func checkAsEncodingJSON(t *testing.T, v any) {
	t.Helper()
	want, err := encodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("Encode(%T %+v)\n got %s\nwant %s", v, v, got, want)
	}
}

// mustEncode is Encode for values that cannot fail to encode.
func mustEncode(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// benchEncode compares encoding v with encoding/json and with Encode.
func benchEncode(b *testing.B, v any) {
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encodeJSON(v)
		}
	})
	b.Run("appendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Encode(v)
		}
	})
}
