package upstream

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

// fullText stands for a whole reply, which several ignored events repeat.
var fullText = strings.Repeat(`<final>a reply \"quoted\" \u00e9</final>`, 50)

func TestIgnorable(t *testing.T) {
	cases := []struct {
		name  string
		event string // the SSE event name
		data  string
		want  bool
	}{
		{"content part done", "response.content_part.done",
			`{"type":"response.content_part.done","item_id":"msg_1","part":{"type":"output_text","text":"` + fullText + `"}}`, true},
		{"output text done", "response.output_text.done", `{"type":"response.output_text.done","text":"` + fullText + `"}`, true},
		{"a message item done", "response.output_item.done",
			`{"type":"response.output_item.done","item":{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","text":"` + fullText + `"}]}}`, true},
		{"typed by the SSE name only", "response.content_part.added", `{"item_id":"msg_1"}`, true},
		{"an MCP item done is read", "response.output_item.done",
			`{"type":"response.output_item.done","item":{"id":"mcp_1","type":"mcp_call","name":"t","output":"{}"}}`, false},
		{"an item done without an item", "response.output_item.done", `{"type":"response.output_item.done"}`, false},
		{"in progress carries a response", "response.in_progress", `{"type":"response.in_progress","response":{"id":"r"}}`, false},
		{"created", "response.created", `{"type":"response.created","response":{"id":"r"}}`, false},
		{"a text delta", evTextDelta, `{"type":"response.output_text.delta","delta":"x"}`, false},
		{"completed", "response.completed", `{"type":"response.completed","response":{"id":"r"}}`, false},
		{"untyped may be an error", "", `{"error":{"message":"down"}}`, false},
		{"a case-folded type key", "", `{"Type":"response.output_text.done"}`, false},
		{"a case-folded item type", "response.output_item.done", `{"type":"response.output_item.done","item":{"Type":"mcp_call"}}`, false},
		{"a later null item type keeps mcp_call", "response.output_item.added",
			`{"type":"response.output_item.added","item":{"type":"mcp_call","id":"x","type":null}}`, false},
		{"repeated items merge", "response.output_item.added", // encoding/json reads both into one item: an MCP call
			`{"type":"response.output_item.added","item":{"type":"mcp_call","id":"x","name":"n"},"item":{"id":"y"}}`, false},
		{"a delta that is no string", "response.mcp_call_arguments.delta", `{"type":"response.mcp_call_arguments.delta","delta":5}`, false},
		{"a type that is no string", "x", `{"type":7}`, false},
		{"a later null type keeps the earlier one", "response.output_text.done", `{"type":"response.created","type":null}`, false},
		{"an escape encoding/json refuses", "response.output_text.done", `{"type":"response.output_text.done","text":"\0"}`, false},
		{"malformed", "response.output_text.done", `{"type":"response.output_text.done"`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &streamState{}
			f := frame{name: tc.event, data: []byte(tc.data)}
			o := strict(new(fastjson.Parser), f)
			if got := o != nil && skipped(o, f.name); got != tc.want {
				t.Fatalf("ignorable = %v, want %v", got, tc.want)
			}
			if tc.want {
				ev, terminal, err := st.parseAny(f)
				if ev.Kind != "" || terminal || err != nil {
					t.Fatalf("ignored, but encoding/json reads %+v, terminal %v, err %v", ev, terminal, err)
				}
			}
		})
	}
}

// skipped reports whether parseFast skips the frame o, named name, as ignorable.
func skipped(o *fastjson.Object, name string) bool {
	typ, item, ok := ignoredFields(o, name)
	return ok && ignorable(typ, item)
}

// FuzzIgnorable holds the shortcut to encoding/json's reading: whenever a frame is skipped
// as ignorable, the general path must read it without error and make no event of it.
func FuzzIgnorable(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.content_part.done","part":{"text":"x"}}`,
		`{"type":"response.output_item.done","item":{"type":"message","content":[]}}`,
		`{"type":"response.output_item.added","item":{"type":"mcp_call","type":"message"}}`,
		`{"type":"response.output_item.added","item":{"type":"mcp_call"},"item":{"id":"y"}}`,
		`{"type":"response.output_item.added","item":{"type":"mcp_call","type":null}}`,
		`{"type":"response.output_text.done","Delta":1}`,
		`{"type":"response.in_progress","response":null}`,
		`{"type":"x","item":{"id":3}}`,
		`{"type":null,"message":"m"}`,
	} {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "response.output_text.done")
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		fr := frame{name: name, data: data}
		if o := strict(new(fastjson.Parser), fr); o == nil || !skipped(o, fr.name) {
			return
		}
		ev, terminal, err := (&streamState{}).parseAny(fr)
		if ev.Kind != "" || terminal || err != nil {
			t.Fatalf("%q (event %q) skipped, but encoding/json reads %+v, terminal %v, err %v", data, name, ev, terminal, err)
		}
	})
}

// turnStream is a whole Responses stream as OpenAI sends one reply: the deltas framed by
// in_progress, the item and content part events, and the done events that repeat the text.
func turnStream(n int) []byte {
	var b bytes.Buffer
	text := strings.Repeat(`<thinking>\n<phase id=\"01\"`, n)
	b.WriteString("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"model\":\"m\",\"status\":\"in_progress\"}}\n\n")
	b.WriteString("event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"model\":\"m\",\"status\":\"in_progress\"}}\n\n")
	b.WriteString("event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n")
	b.WriteString("event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"\"}}\n\n")
	writeDeltas(&b, 4, n)
	fmt.Fprintf(&b, "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"text\":\"%s\",\"logprobs\":[]}\n\n", n+4, text)
	fmt.Fprintf(&b, "event: response.content_part.done\ndata: {\"type\":\"response.content_part.done\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"%s\"}}\n\n", n+5, text)
	fmt.Fprintf(&b, "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":%d,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"%s\"}],\"role\":\"assistant\"}}\n\n", n+6, text)
	fmt.Fprintf(&b, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":%d,\"response\":{\"id\":\"resp_1\",\"model\":\"m\",\"status\":\"completed\",\"usage\":{\"input_tokens\":1,\"output_tokens\":2,\"total_tokens\":3}}}\n\n", n+7)
	return b.Bytes()
}

// BenchmarkReadEventsTurn reads one whole reply of 60 deltas, the events around them
// included, with a parser pool shared from reply to reply as a Client shares it; ns/op and
// allocs/op are per reply.
func BenchmarkReadEventsTurn(b *testing.B) {
	stream := turnStream(60)
	var parsers parserPool
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		deltas := 0
		err := readEvents(bytes.NewReader(stream), "req", &parsers, func(ev Event, err error) bool {
			if ev.Kind == EventTextDelta {
				deltas++
			}
			return true
		})
		if err != nil || deltas != 60 {
			b.Fatalf("%d deltas, err %v", deltas, err)
		}
	}
}
