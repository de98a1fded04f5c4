package store

import (
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lib/pq"
)

func TestJSONScan(t *testing.T) {
	cases := []struct {
		name string
		src  any
		want JSON
	}{
		{"NULL", nil, nil},
		{"pq bytes", []byte(`{"a": 1}`), JSON(`{"a": 1}`)},
		{"sqlite text", `[1,2]`, JSON(`[1,2]`)},
		{"literal null", "null", nil},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := JSON("previous")
			if err := j.Scan(tc.src); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, j); diff != "" {
				t.Errorf("Scan(%v) (-want +got):\n%s", tc.src, diff)
			}
		})
	}
	t.Run("copies the driver's buffer", func(t *testing.T) {
		buf := []byte(`{"a":1}`)
		var j JSON
		_ = j.Scan(buf)
		buf[2] = 'X'
		if string(j) != `{"a":1}` {
			t.Errorf("JSON shares the driver's buffer: %s", j)
		}
	})
	t.Run("unsupported type", func(t *testing.T) {
		var j JSON
		if err := j.Scan(42); err == nil {
			t.Error("Scan(int) = nil, want an error")
		}
	})
}

func TestJSONValue(t *testing.T) {
	cases := []struct {
		name    string
		j       JSON
		want    any
		wantErr bool
	}{
		{"nil", nil, nil, false},
		{"literal null", JSON(" null "), nil, false},
		{"object as text", JSON(`{"a":1}`), `{"a":1}`, false},
		{"invalid", JSON(`{"a"`), nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.j.Value()
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Value() = %#v, %v; want %#v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestJSONMarshal(t *testing.T) {
	type wrap struct {
		A JSON `json:"a"`
		B JSON `json:"b"`
	}
	b, err := json.Marshal(wrap{A: nil, B: JSON(`{"x": [1, 2]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":null,"b":{"x":[1,2]}}`; string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	var back wrap
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.A != nil || string(back.B) != `{"x":[1,2]}` {
		t.Errorf("Unmarshal = %q %q, want nil and the object", back.A, back.B)
	}
}

func TestPostgresDSN(t *testing.T) {
	cases := []struct{ in, want string }{
		{"postgres://u@127.0.0.1:5432/db", "postgres://u@127.0.0.1:5432/db?sslmode=disable"},
		{"postgres://u@localhost/db", "postgres://u@localhost/db?sslmode=disable"},
		{"postgresql://u@[::1]:5432/db", "postgresql://u@[::1]:5432/db?sslmode=disable"},
		{"postgres://u@127.0.0.2/db?application_name=x", "postgres://u@127.0.0.2/db?application_name=x&sslmode=disable"},
		{"postgres:///db?host=/var/run/postgresql", "postgres:///db?host=%2Fvar%2Frun%2Fpostgresql&sslmode=disable"},
		{"postgres://u@db.example.com/db", "postgres://u@db.example.com/db"},
		{"postgres://u@10.0.0.5/db", "postgres://u@10.0.0.5/db"},
		{"postgres://u@127.0.0.1/db?sslmode=require", "postgres://u@127.0.0.1/db?sslmode=require"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := postgresDSN(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("postgresDSN(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestSQLiteIndexName(t *testing.T) {
	cases := []struct{ msg, want string }{
		{"constraint failed: UNIQUE constraint failed: messages.session_id (2067)", idxOneRunning},
		{"constraint failed: UNIQUE constraint failed: messages.session_id, messages.client_request_id (2067)", idxClientRequestID},
		{"constraint failed: UNIQUE constraint failed: messages.id (1555)", "messages.id"},
		{"something else", ""},
	}
	for _, tc := range cases {
		if got := sqliteIndexName(tc.msg); got != tc.want {
			t.Errorf("sqliteIndexName(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}

func TestToNotification(t *testing.T) {
	cases := []struct {
		name string
		in   *pq.Notification
		want Notification
	}{
		{"reconnect", nil, Notification{Resync: true}},
		{"payload", &pq.Notification{Extra: "0190-ab:42"}, Notification{MessageID: "0190-ab", Seq: 42}},
		{"no seq", &pq.Notification{Extra: "abc"}, Notification{Resync: true}},
		{"bad seq", &pq.Notification{Extra: "abc:x"}, Notification{Resync: true}},
		{"no id", &pq.Notification{Extra: ":3"}, Notification{Resync: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := toNotification(tc.in); got != tc.want {
				t.Errorf("toNotification = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDeliverOverflow(t *testing.T) {
	out := make(chan Notification, 2)
	n := func(seq int64) Notification { return Notification{MessageID: "m", Seq: seq} }
	owed := false
	for seq := int64(1); seq <= 4; seq++ { // 3 and 4 do not fit
		owed = deliver(out, n(seq), owed)
	}
	if !owed {
		t.Fatal("no Resync owed after drops")
	}
	<-out
	<-out
	owed = deliver(out, n(5), owed) // the owed Resync stands for 5 too
	owed = deliver(out, n(6), owed)
	if owed {
		t.Fatal("Resync still owed with room in the channel")
	}
	got := []Notification{<-out, <-out}
	want := []Notification{{Resync: true}, n(6)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after overflow (-want +got):\n%s", diff)
	}
}

func TestTextListRefusesWhatWouldShiftIt(t *testing.T) {
	cases := []struct {
		name string
		elem string
	}{
		{"record separator", "{\"a\":\"x\x1ey\"}"},
		{"NUL", "{\"a\":\"x\x00y\"}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newTextList(0)
			if err := l.add([]byte(tc.elem)); err == nil {
				t.Errorf("add(%q) = nil, want an error", tc.elem)
			}
			if v, _ := l.Value(); valueText(v) != "" {
				t.Errorf("a refused element was kept: %q", v)
			}
		})
	}
}

// TestNullableTextsWritesPQsLiteral holds nullableTexts to the literal pq.Array writes for
// the same []sql.NullString, which PostgreSQL has always read back as written.
func TestNullableTextsWritesPQsLiteral(t *testing.T) {
	cases := []struct {
		name string
		in   []sql.NullString
	}{
		{"nil", nil},
		{"empty", []sql.NullString{}},
		{"NULLs", []sql.NullString{{}, {}}},
		{"plain and NULL", []sql.NullString{{String: "a", Valid: true}, {}, {String: "", Valid: true}}},
		{"quotes, backslashes, braces, commas", []sql.NullString{{String: `{"a":"b\\c"}, x`, Valid: true}, {String: `NULL`, Valid: true}}},
		{"unicode and newlines", []sql.NullString{{String: "你好\n😀\t\x1e", Valid: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := pq.Array(tc.in).Value()
			if err != nil {
				t.Fatal(err)
			}
			got, err := nullableTexts(tc.in).Value()
			if err != nil {
				t.Fatal(err)
			}
			if valueText(got) != valueText(want) || (got == nil) != (want == nil) {
				t.Errorf("nullableTexts = %#v, pq.Array = %#v", got, want)
			}
		})
	}
}

// FuzzNullableTexts holds nullableTexts to pq.Array's literal for any texts.
func FuzzNullableTexts(f *testing.F) {
	f.Add(`a"b`, `c\d`, uint8(2))
	f.Add(`{}`, `NULL`, uint8(0))
	f.Fuzz(func(t *testing.T, a, b string, nulls uint8) {
		in := []sql.NullString{{String: a, Valid: nulls&1 == 0}, {String: b, Valid: nulls&2 == 0}, {}}
		want, _ := pq.Array(in).Value()
		if got, _ := nullableTexts(in).Value(); valueText(got) != valueText(want) {
			t.Fatalf("nullableTexts = %#v, pq.Array = %#v", got, want)
		}
	})
}

// valueText is the text a driver value sends: the parameters built here are bytes, where
// pq.Array's are strings, and lib/pq sends both alike to a text parameter.
func valueText(v driver.Value) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	case nil:
		return ""
	}
	panic(fmt.Sprintf("valueText: %T", v))
}

// The qualified fence of the commit statements must stay the condition of a running
// generation (and of the partial index it is written to match), not drift from it.
func TestRunningAssistantMIsRunningAssistant(t *testing.T) {
	if got := strings.ReplaceAll(runningAssistantM, "m.", ""); got != runningAssistant {
		t.Errorf("runningAssistantM unqualified is %q, want runningAssistant %q", got, runningAssistant)
	}
}

// A commit of several messages sends their runs in message id order, whatever order the
// batch brought them in: the UPDATE locks the rows in the runs' order, and RenewLeases
// locks them in id order, so any other order can deadlock the two (byMessageID).
func TestCommitRunsInMessageIDOrder(t *testing.T) {
	delta := func(id string, seq int64) Event {
		return Event{MessageID: id, Seq: seq, Name: "content_delta", Data: JSON(`{"delta":"x"}`)}
	}
	for _, tc := range []struct {
		name   string
		events []Event
	}{
		{name: "deltas of two messages, the later id first", events: []Event{delta("m-b", 3), delta("m-b", 4), delta("m-a", 7)}},
		{name: "already in order", events: []Event{delta("m-a", 7), delta("m-b", 3), delta("m-b", 4)}},
		{name: "a finished message after a running one", events: []Event{delta("m-b", 3),
			{MessageID: "m-a", Seq: 7, Name: "completed", Data: JSON(`{}`), Finish: &Message{ID: "m-a", Status: StatusCompleted}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			given := slices.Clone(tc.events)
			_, args, err := commitStatement("owner", tc.events, summarise(tc.events))
			if err != nil {
				t.Fatal(err)
			}
			var runs *textList
			for _, a := range args {
				if l, ok := a.(*textList); ok && strings.HasPrefix(string(l.b), "m-") {
					runs = l // the runs' message ids: the first list of ids among the arguments
					break
				}
			}
			if runs == nil {
				t.Fatalf("no list of the runs' message ids among %d arguments", len(args))
			}
			if got := strings.Split(string(runs.b), string(rune(textListSep))); !slices.Equal(got, []string{"m-a", "m-b"}) {
				t.Errorf("runs' message ids %q, want [m-a m-b]", got)
			}
			if !slices.EqualFunc(tc.events, given, func(a, b Event) bool { return a.MessageID == b.MessageID && a.Seq == b.Seq }) {
				t.Error("the caller's batch was reordered")
			}
		})
	}
}
