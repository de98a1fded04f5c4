package upstream

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/valyala/fastjson"
)

// deltaStream is a Responses stream of n text deltas of 24 characters, framed as OpenAI
// frames them (event name, sequence number, logprobs, obfuscation), ending in completed.
func deltaStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"model\":\"m\",\"status\":\"in_progress\"}}\n\n")
	writeDeltas(&b, 1, n)
	fmt.Fprintf(&b, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":%d,\"response\":{\"id\":\"resp_1\",\"model\":\"m\",\"status\":\"completed\",\"usage\":{\"input_tokens\":1,\"output_tokens\":2,\"total_tokens\":3}}}\n\n", n+1)
	return b.Bytes()
}

// writeDeltas writes n text deltas of 24 characters, the first with sequence number from.
func writeDeltas(b *bytes.Buffer, from, n int) {
	for i := from; i < from+n; i++ {
		fmt.Fprintf(b, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"<thinking>\\n<phase id=\\\"%02d\\\"\",\"logprobs\":[],\"obfuscation\":\"x9Q2kLm0aBcD\"}\n\n", i, i%100)
	}
}

// TestDeltaWithAFieldEncodingJSONRefuses: a delta frame whose other field wireEvent maps has
// the wrong type fails the turn as a malformed event on the general path, so the fast path
// must not read it as a delta.
func TestDeltaWithAFieldEncodingJSONRefuses(t *testing.T) {
	for _, data := range []string{
		`{"type":"response.output_text.delta","delta":"a","item_id":5}`,
		`{"type":"response.output_text.delta","delta":"a","message":{}}`,
		`{"type":"response.output_text.delta","delta":"a","item":"x"}`,
		`{"type":"response.output_text.delta","delta":"a","response":{"usage":{"input_tokens":"1"}}}`,
	} {
		f := frame{name: evTextDelta, data: []byte(data)}
		if o := strict(new(fastjson.Parser), f); o != nil {
			if _, ok := deltaOf(o, f.name); ok {
				t.Errorf("deltaOf read %s", data)
			}
		}
		sameAsEncodingJSON(t, &streamState{}, f)
	}
}

// BenchmarkReadEventsPerDelta is the upstream side of the hot path: framing and decoding one
// text delta. Run with -benchmem; allocs/op is per delta, the delta's own text included.
func BenchmarkReadEventsPerDelta(b *testing.B) {
	const n = 1000
	stream := deltaStream(n)
	var parsers parserPool
	b.SetBytes(int64(len(stream) / n))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += n {
		deltas := 0
		err := readEvents(bytes.NewReader(stream), "req", &parsers, func(ev Event, err error) bool {
			if ev.Kind == EventTextDelta {
				deltas++
			}
			return true
		})
		if err != nil || deltas != n {
			b.Fatalf("%d deltas, err %v", deltas, err)
		}
	}
}

// FuzzParseDelta holds the text-delta fast path to encoding/json's reading of the same frame:
// whenever the fast path answers, the general path must give the same event.
func FuzzParseDelta(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.output_text.delta","delta":"Hi","logprobs":[],"obfuscation":"x"}`,
		`{"delta":"no type"}`,
		`{"type":"response.output_text.delta","delta":"a","delta":"b"}`,
		`{"type":"response.output_text.done","type":null,"delta":"a later null type"}`,
		`{"type":"","delta":"empty type"}`,
		`{"type":"response.output_text.delta","delta":"\ud800 lone surrogate \u00e9 \"q\" \\ \n"}`,
		`{"type":"response.output_text.delta","delta":"` + "\xff" + `"}`,
		`{"type":"response.output_text.delta","delta":null}`,
		`{"type":"response.output_text.done","delta":"x"}`,
		`{"type":"response.output_text.delta","delta":"x"`,
		`{"type":"response.output_text.delta","delta":"x","sequence_number":1.2.3}`, // fastjson reads any run of number bytes
		`{"type":"response.output_text.delta","delta":"x","logprobs":nan}`,
		`{"type":"response.output_text.delta","delta":"x","item_id":5}`, // encoding/json fails the frame
		`{"type":"response.output_text.delta","delta":"x","Item_ID":"m","Response":{"id":1}}`,
		`{"type":"response.output_text.delta","Delta":"x"}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, named bool) {
		fr := frame{data: data}
		if named {
			fr.name = evTextDelta
		}
		st := &streamState{}
		o := strict(new(fastjson.Parser), fr)
		if o == nil {
			return
		}
		fast, ok := deltaOf(o, fr.name)
		if !ok {
			return
		}
		want, terminal, err := st.parseAny(fr)
		if err != nil || terminal || want.Kind != EventTextDelta || want.Delta != fast.Delta {
			t.Fatalf("fast path read %q as delta %q; encoding/json: %+v, terminal %v, err %v", data, fast.Delta, want, terminal, err)
		}
	})
}
