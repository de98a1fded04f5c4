package upstream

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/valyala/fastjson"
)

// responseFrames are frames with a response (created, in_progress, completed): the shapes
// servers send, and the ones the fast path must leave to encoding/json or read exactly as
// it does.
var responseFrames = []struct {
	name, event, data string
	fast              bool // completedOf answers
}{
	{"as OpenAI sends it", "response.completed", `{"type":"response.completed","sequence_number":99,"response":{"id":"resp_1","object":"response","model":"gpt-4o-mini","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"` + fullText + `"}]}],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":30,"total_tokens":42},"error":null,"incomplete_details":null}}`, true},
	{"typed by the SSE name only", "response.completed", `{"response":{"id":"r"}}`, true},
	{"no response", "response.completed", `{"type":"response.completed"}`, true},
	{"a null response", "response.completed", `{"type":"response.completed","response":null}`, true},
	{"a later null response drops the first", "response.completed", `{"type":"response.completed","response":{"id":"r","model":"m"},"response":null}`, true},
	{"repeated responses merge", "response.completed", `{"type":"response.completed","response":{"id":"r"},"response":{"model":"m"}}`, true},
	{"a null id keeps the earlier one", "response.completed", `{"type":"response.completed","response":{"id":"r","id":null}}`, true},
	{"a null usage", "response.completed", `{"type":"response.completed","response":{"usage":{"input_tokens":1},"usage":null}}`, true},
	{"a null count keeps the earlier one", "response.completed", `{"type":"response.completed","response":{"usage":{"total_tokens":3,"total_tokens":null}}}`, true},
	{"an error object with a numeric code", "response.completed", `{"type":"response.completed","response":{"id":"r","error":{"code":5,"message":"m"}}}`, true},
	{"created", "response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"m","output":[],"usage":null}}`, true},
	{"created with usage", "response.created", `{"type":"response.created","response":{"id":"r","usage":{"input_tokens":3}}}`, true},
	{"created, typed by the SSE name only", "response.created", `{"response":{"id":"r"}}`, true},
	{"in progress", "response.in_progress", `{"type":"response.in_progress","response":{"id":"r"}}`, true},
	{"in progress as OpenAI sends it", "response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"m","output":[],"tools":[{"type":"mcp","server_label":"s","allowed_tools":["a"],"headers":null}],"usage":null}}`, true},
	{"in progress, typed by the SSE name only", "response.in_progress", `{"response":{"id":"r"}}`, true},
	{"queued, typed by the SSE name under an empty type", "response.queued", `{"type":"","response":{"id":"r"}}`, true},
	{"in progress with a response that is no object", "response.in_progress", `{"type":"response.in_progress","response":"r"}`, false},
	{"in progress with an id that is no string", "response.in_progress", `{"type":"response.in_progress","response":{"id":7}}`, false},
	{"an untyped frame may be an error", "", `{"response":{"id":"r"},"error":{"message":"down"}}`, false},
	{"a type the SSE name contradicts", "response.created", `{"type":"response.failed","response":{"id":"r"}}`, false},
	{"a later null type keeps the earlier one", "response.created", `{"type":"response.completed","type":null,"response":{"id":"r"}}`, true},
	{"a fractional count", "response.completed", `{"type":"response.completed","response":{"usage":{"input_tokens":1.5}}}`, false},
	{"an exponent count", "response.completed", `{"type":"response.completed","response":{"usage":{"input_tokens":1e2}}}`, false},
	{"a count out of range", "response.completed", `{"type":"response.completed","response":{"usage":{"input_tokens":99999999999999999999}}}`, false},
	{"a case-folded id", "response.completed", `{"type":"response.completed","response":{"ID":"r"}}`, false},
	{"a case-folded response key", "response.completed", `{"type":"response.completed","Response":{"id":"r"}}`, false},
	{"an id that is no string", "response.completed", `{"type":"response.completed","response":{"id":7}}`, false},
	{"a response that is no object", "response.completed", `{"type":"response.completed","response":"r"}`, false},
	{"a status that is no string", "response.completed", `{"type":"response.completed","response":{"status":1}}`, false},
	{"an error message that is no string", "response.completed", `{"type":"response.completed","response":{"error":{"message":1}}}`, false},
	{"a type that is no string", "response.completed", `{"type":1,"response":{"id":"r"}}`, false},
}

// TestResponseEventOf checks the fast path against encoding/json's reading of the same
// frames.
func TestResponseEventOf(t *testing.T) {
	for _, tc := range responseFrames {
		t.Run(tc.name, func(t *testing.T) { checkFastPath(t, tc.event, tc.data, tc.fast, responseEventAnswers) })
	}
}

// responseEventAnswers is responseEventOf as a fastPath.
func responseEventAnswers(o *fastjson.Object, name string) bool {
	_, _, ok := responseEventOf(o, name)
	return ok
}

// fastPath reports whether one of parse's shortcuts answers for a frame strict parsed.
type fastPath func(o *fastjson.Object, name string) bool

// checkFastPath holds one frame to a shortcut: it answers as fast says, and parse reads the
// frame as parseAny does.
func checkFastPath(t *testing.T, event, data string, fast bool, answers fastPath) {
	t.Helper()
	f := frame{name: event, data: []byte(data)}
	o := strict(new(fastjson.Parser), f)
	if o == nil {
		t.Fatal("strict refused the frame")
	}
	if ok := answers(o, f.name); ok != fast {
		t.Fatalf("the fast path answered %v, want %v", ok, fast)
	}
	sameAsEncodingJSON(t, &streamState{requestID: "req-1"}, f)
}

// fuzzFastPath is a fuzz body for a shortcut: whenever it answers, the general path must
// read the same event.
func fuzzFastPath(t *testing.T, data []byte, name string, answers fastPath) {
	fr := frame{name: name, data: data}
	if o := strict(new(fastjson.Parser), fr); o != nil && answers(o, fr.name) {
		sameAsEncodingJSON(t, &streamState{requestID: "req-1"}, fr)
	}
}

// TestInvalidUTF8GoesTheGeneralWay holds frames with invalid UTF-8 to encoding/json's
// reading (each bad byte becomes U+FFFD): fastjson would keep the bytes, and PostgreSQL's
// text columns refuse them.
func TestInvalidUTF8GoesTheGeneralWay(t *testing.T) {
	cases := []struct{ name, event, data, want string }{
		{"in a response id", "response.created", "{\"type\":\"response.created\",\"response\":{\"id\":\"\x8desp_1\"}}", "\ufffdesp_1"},
		{"in a completed response's model", "response.completed", "{\"type\":\"response.completed\",\"response\":{\"model\":\"m\xff\xfe\"}}", "m\ufffd\ufffd"},
		{"in a text delta", evTextDelta, "{\"type\":\"response.output_text.delta\",\"delta\":\"a\xc3\"}", "a\ufffd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := frame{name: tc.event, data: []byte(tc.data)}
			if strict(new(fastjson.Parser), f) != nil {
				t.Fatal("the fast path took a frame with invalid UTF-8")
			}
			st := &streamState{requestID: "req-1"}
			sameAsEncodingJSON(t, st, f)
			ev, _, err := st.parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := ev.ResponseID + ev.Model + ev.Delta; got != tc.want {
				t.Fatalf("read %q, want %q", got, tc.want)
			}
		})
	}
}

// sameAsEncodingJSON fails when parse and parseAny read f differently.
func sameAsEncodingJSON(t *testing.T, st *streamState, f frame) {
	t.Helper()
	got, gotTerminal, gotErr := st.parse(f)
	want, wantTerminal, wantErr := st.parseAny(f)
	if (gotErr != nil) != (wantErr != nil) || gotTerminal != wantTerminal {
		t.Fatalf("frame %q: parse gives terminal %v, err %v; encoding/json terminal %v, err %v", f.data, gotTerminal, gotErr, wantTerminal, wantErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("frame %q (-json +fast):\n%s", f.data, diff)
	}
}

// FuzzResponseEvent holds the fast path to encoding/json: whenever it answers, the general
// path must read the same event.
func FuzzResponseEvent(f *testing.F) {
	for _, tc := range responseFrames {
		f.Add([]byte(tc.data), tc.event)
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) { fuzzFastPath(t, data, name, responseEventAnswers) })
}

// BenchmarkCompletedFrame is the terminal event of a turn, its reply repeated in output,
// read by parse (the fast path) and by parseAny (encoding/json, what parse did before).
func BenchmarkCompletedFrame(b *testing.B) {
	data := []byte(strings.Replace(responseFrames[0].data, fullText, fullText+fullText, 1))
	f := frame{name: "response.completed", data: data}
	for _, path := range []struct {
		name  string
		parse func(*streamState, frame) (Event, bool, error)
	}{{"parse", (*streamState).parse}, {"encoding-json", (*streamState).parseAny}} {
		b.Run(path.name, func(b *testing.B) {
			st := &streamState{}
			b.ReportAllocs()
			for b.Loop() {
				ev, terminal, err := path.parse(st, f)
				if err != nil || !terminal || ev.ResponseID != "resp_1" {
					b.Fatal(ev, terminal, err)
				}
			}
		})
	}
}
