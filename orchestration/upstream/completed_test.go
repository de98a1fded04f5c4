package upstream

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// completedFrames are response.completed frames: the shapes servers send, and the ones the
// fast path must leave to encoding/json or read exactly as it does.
var completedFrames = []struct {
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
	{"another event", "response.created", `{"type":"response.created","response":{"id":"r"}}`, false},
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

// TestCompletedOf checks the fast path against encoding/json's reading of the same frames.
func TestCompletedOf(t *testing.T) {
	for _, tc := range completedFrames {
		t.Run(tc.name, func(t *testing.T) {
			st := &streamState{}
			f := frame{name: tc.event, data: []byte(tc.data)}
			o := st.strict(f)
			if o == nil {
				t.Fatal("strict refused the frame")
			}
			got, ok := completedOf(o, f.name)
			if ok != tc.fast {
				t.Fatalf("completedOf answered %v, want %v", ok, tc.fast)
			}
			if !ok {
				return
			}
			want, terminal, err := st.parseAny(f)
			if err != nil || !terminal {
				t.Fatalf("encoding/json: terminal %v, err %v", terminal, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fast path differs from encoding/json (-json +fast):\n%s", diff)
			}
		})
	}
}

// FuzzCompleted holds the fast path to encoding/json: whenever it answers, the general path
// must read the same terminal event.
func FuzzCompleted(f *testing.F) {
	for _, tc := range completedFrames {
		f.Add([]byte(tc.data), tc.event == "response.completed")
	}
	f.Fuzz(func(t *testing.T, data []byte, named bool) {
		fr := frame{data: data}
		if named {
			fr.name = "response.completed"
		}
		st := &streamState{}
		o := st.strict(fr)
		if o == nil {
			return
		}
		got, ok := completedOf(o, fr.name)
		if !ok {
			return
		}
		want, terminal, err := st.parseAny(fr)
		if err != nil || !terminal {
			t.Fatalf("fast path read %q as %+v; encoding/json: terminal %v, err %v", data, got, terminal, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("frame %q (-json +fast):\n%s", data, diff)
		}
	})
}

// BenchmarkCompletedFrame is the terminal event of a turn, its reply repeated in output,
// read by parse (the fast path) and by parseAny (encoding/json, what parse did before).
func BenchmarkCompletedFrame(b *testing.B) {
	data := []byte(strings.Replace(completedFrames[0].data, fullText, fullText+fullText, 1))
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
