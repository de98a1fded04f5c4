package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzEventRuns holds the run format to a round trip: whatever names and payloads a batch
// of two messages brings, the runs read back are the events written, in order, or the
// batch is refused (a name with a separator, a payload that is not JSON).
func FuzzEventRuns(f *testing.F) {
	f.Add("content_delta", []byte(`{"delta":"a\u001fb"}`), "status", []byte(`null`), uint8(5))
	f.Add("heartbeat", []byte(``), "x\x1fy", []byte(`{}`), uint8(2))
	f.Add("completed", []byte(`{"a":[1,2]}`), "error", []byte("{\"a\":\"\x1e\"}"), uint8(1))
	f.Fuzz(func(t *testing.T, name1 string, data1 []byte, name2 string, data2 []byte, n uint8) {
		at := time.Date(2026, 11, 26, 12, 0, 0, 123456000, time.UTC)
		var events []Event // a's events, then b's
		for i := range int64(n%8) + 1 {
			events = append(events, Event{MessageID: "a", Seq: 3 + i, Name: name1, Data: JSON(data1), CreatedAt: at.Add(time.Duration(i) * time.Microsecond)})
		}
		for i := range int64(n%3) + 1 {
			events = append(events, Event{MessageID: "b", Seq: 1 + i, Name: name2, Data: JSON(data2), CreatedAt: at})
		}
		rows, err := runRows(events)
		valid := func(name string, data []byte) bool {
			return !strings.ContainsAny(name, "\x1e\x1f\x00") && (JSON(data).IsNull() || json.Valid(data))
		}
		if !valid(name1, data1) || !valid(name2, data2) {
			if err == nil {
				t.Fatalf("runRows took %q %q and %q %q", name1, data1, name2, data2)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 {
			t.Fatalf("%d runs for two messages", len(rows))
		}
		var got []Event
		for _, r := range rows {
			run, err := splitRun(r.messageID, r.seq, r.names, r.data, r.times)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, run...)
		}
		if len(got) != len(events) {
			t.Fatalf("read %d events, wrote %d", len(got), len(events))
		}
		for i, w := range events {
			g := got[i]
			wantData := w.Data
			if w.Data.IsNull() {
				wantData = nil
			}
			if g.MessageID != w.MessageID || g.Seq != w.Seq || g.Name != w.Name || !bytes.Equal(g.Data, wantData) || !g.CreatedAt.Equal(w.CreatedAt) {
				t.Fatalf("event %d: read %+v, wrote %+v", i, g, w)
			}
		}
	})
}
