package events

import (
	"strings"
	"testing"
)

func TestDeltaJSON(t *testing.T) {
	base := Base{MessageID: "0194f0c2-msg", RequestID: "req-1"}
	cases := []struct {
		name string
		d    DeltaData
	}{
		{"plain", DeltaData{Base: base, Seq: 1, Delta: "Hello"}},
		{"ThinkingML and HTML characters", DeltaData{Base: base, Seq: 2, Delta: `<phase id="1">a & b</phase>`}},
		{"escapes", DeltaData{Base: base, Seq: 3, Delta: "q\"b\\s\n\r\t\b\f\x00\x1f\x7f"}},
		{"CJK and emoji", DeltaData{Base: base, Seq: 4, Delta: "你好，世界 😀"}},
		{"line and paragraph separators", DeltaData{Base: base, Seq: 5, Delta: "a\u2028b\u2029c"}},
		{"invalid UTF-8", DeltaData{Base: base, Seq: 6, Delta: "a\xffb\xc3"}},
		{"a retry's attempt", DeltaData{Base: base, Seq: 70, Delta: "again", Attempt: 2}},
		{"empty", DeltaData{}},
		{"negative numbers", DeltaData{Seq: -1, Attempt: -3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkAsEncodingJSON(t, &tc.d)
		})
	}
}

// FuzzDeltaJSON holds the content_delta encoder to encoding/json's bytes.
func FuzzDeltaJSON(f *testing.F) {
	f.Add("m", "r", "<final>\n\"x\"\\</final>", 3, 0)
	f.Add("\u2028", "\xff", "\x00\x7f😀", -1, 2)
	f.Fuzz(func(t *testing.T, msg, req, delta string, seq, attempt int) {
		checkAsEncodingJSON(t, &DeltaData{Base: Base{MessageID: msg, RequestID: req}, Seq: seq, Delta: delta, Attempt: attempt})
	})
}

func BenchmarkEncodeDelta(b *testing.B) {
	d := DeltaData{Base: Base{MessageID: "0194f0c2-7a3e-7c1d-9b2a-3f4e5d6c7b8a", RequestID: "req-0194f0c2"},
		Seq: 42, Delta: strings.Repeat("<phase id=\"1\">", 2)}
	benchEncode(b, &d)
}
