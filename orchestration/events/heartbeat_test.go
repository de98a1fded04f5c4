package events

import "testing"

// AppendHeartbeat writes what the encoder writes, for plain ids and for any others.
func FuzzAppendHeartbeat(f *testing.F) {
	f.Add("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "req-1", int64(1765104000000), int64(42))
	f.Add("", "", int64(0), int64(-1))
	f.Add("quote\"back\\slash", "tab\tnewline\n<&>", int64(1), int64(2))
	f.Add("ünïcode \u2028 line separator", "\xff invalid", int64(-5), int64(9))
	f.Fuzz(func(t *testing.T, msg, req string, ts, last int64) {
		hb := HeartbeatData{Base: Base{MessageID: msg, RequestID: req}, TS: ts, LastEventID: last}
		want := mustEncode(t, hb)
		if got := AppendHeartbeat([]byte("x"), hb); string(got) != "x"+string(want) {
			t.Fatalf("AppendHeartbeat =\n %s\nEncode =\n %s", got[1:], want)
		}
	})
}

func BenchmarkAppendHeartbeat(b *testing.B) {
	hb := HeartbeatData{Base: Base{MessageID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", RequestID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c"},
		TS: 1765104000000, LastEventID: 42}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendHeartbeat(buf[:0], hb)
	}
}
