package thinkingml

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runFilter feeds chunks to a new Filter and returns everything forwarded and withheld.
func runFilter(t testing.TB, chunks []string) (string, []Block) {
	t.Helper()
	f := NewFilter()
	var out strings.Builder
	var blocks []Block
	for _, c := range chunks {
		o, b := f.Write(c)
		out.WriteString(o)
		blocks = append(blocks, b...)
	}
	o, b := f.Close()
	out.WriteString(o)
	return out.String(), append(blocks, b...)
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		out    string
		blocks []Block
	}{
		{name: "plain text passes", chunks: []string{"a < b & c", " 中文 "}, out: "a < b & c 中文 "},
		{name: "final inside thinking is escaped",
			chunks: []string{"<thinking>say <final> and </final></thinking><final>x</final>"},
			out:    "<thinking>say &lt;final&gt; and &lt;/final&gt;</thinking><final>x</final>"},
		{name: "final before thinking is left alone", chunks: []string{"<think><final></think><thinking><final>"},
			out: "<think><final></think><thinking>&lt;final&gt;"},
		{name: "only the first thinking counts", chunks: []string{"<thinking></thinking><final><thinking><final></final>"},
			out: "<thinking></thinking><final><thinking><final></final>"},
		{name: "final with attributes or other case is not escaped", chunks: []string{"<thinking><final x> <Final></thinking>"},
			out: "<thinking><final x> <Final></thinking>"},
		{name: "tags split across chunks", chunks: []string{"<thin", "king>a<", "/fin", "al>b</thinki", "ng><fin", "al>"},
			out: "<thinking>a&lt;/final&gt;b</thinking><final>"},
		{name: "ui block withheld", chunks: []string{`<final>x<AGENT_UI_JSON>{"type":"card"}</AGENT_UI_JSON>y</final>`},
			out: "<final>xy</final>", blocks: []Block{{BlockUIJSON, `{"type":"card"}`}}},
		{name: "state patch inside thinking withheld", chunks: []string{"<thinking>a<AGENT_STATE_PATCH>{}</AGENT_STATE_PATCH>b"},
			out: "<thinking>ab", blocks: []Block{{BlockStatePatch, "{}"}}},
		{name: "blocks split byte by byte around their tags",
			chunks: strings.Split("<AGENT_UI_JSON>[1]</AGENT_UI_JSON><AGENT_STATE_PATCH>{\"a\":1}</AGENT_STATE_PATCH>", ""),
			blocks: []Block{{BlockUIJSON, "[1]"}, {BlockStatePatch, `{"a":1}`}}},
		{name: "block body keeps other tags", chunks: []string{"<AGENT_UI_JSON><final></AGENT_STATE_PATCH></AGENT_UI_JSON>"},
			blocks: []Block{{BlockUIJSON, "<final></AGENT_STATE_PATCH>"}}},
		{name: "look-alike tags pass", chunks: []string{"<AGENT_UI_JSONX><AGENT_X></AGENT_UI_JSON>"},
			out: "<AGENT_UI_JSONX><AGENT_X></AGENT_UI_JSON>"},
		{name: "held tag start flushed at close", chunks: []string{"done <AGENT_STATE"}, out: "done <AGENT_STATE"},
		{name: "unterminated block is forwarded as text", chunks: []string{"<final>a<AGENT_UI_JSON>{\"type\"", ":1}</final>"},
			out: "<final>a<AGENT_UI_JSON>{\"type\":1}</final>"},
		{name: "unterminated block is re-read as text",
			chunks: []string{"<thinking><AGENT_UI_JSON>x<final><AGENT_STATE_PATCH>{}</AGENT_STATE_PATCH></thinking><final><AGENT_UI"},
			out:    "<thinking><AGENT_UI_JSON>x&lt;final&gt;</thinking><final><AGENT_UI",
			blocks: []Block{{BlockStatePatch, "{}"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, blocks := runFilter(t, tc.chunks)
			if diff := cmp.Diff(tc.out, out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.blocks, blocks); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFilterHoldsBackOnlyPossibleTags checks what each single Write lets through at once.
func TestFilterHoldsBackOnlyPossibleTags(t *testing.T) {
	tests := []struct {
		name   string
		before string // written first, output ignored
		chunk  string
		want   string
	}{
		{name: "plain text at once", chunk: "hello", want: "hello"},
		{name: "lone < may start a block", chunk: "a <", want: "a "},
		{name: "block tag start held", chunk: "x<AGENT_UI_", want: "x"},
		{name: "released when it cannot be a block", before: "x<AGENT_UI_", chunk: "Y", want: "<AGENT_UI_Y"},
		{name: "thinking tag start passes, it is only watched", chunk: "<thin", want: "<thin"},
		{name: "final outside thinking passes", chunk: "<fin", want: "<fin"},
		{name: "final start inside thinking held", before: "<thinking>", chunk: "a<fi", want: "a"},
		{name: "end of thinking passes once it cannot be </final>", before: "<thinking>", chunk: "</th", want: "</th"},
		{name: "comparison passes", chunk: "x<5", want: "x<5"},
		{name: "block body withheld", before: "<AGENT_UI_JSON>", chunk: "{}", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFilter()
			f.Write(tc.before)
			if got, _ := f.Write(tc.chunk); got != tc.want {
				t.Errorf("Write(%q) = %q, want %q", tc.chunk, got, tc.want)
			}
		})
	}
}

func TestFilterReusableAfterClose(t *testing.T) {
	f := NewFilter()
	f.Write("<thinking><AGENT_UI_JSON>{")
	f.Close()
	if out, _ := f.Write("<final>"); out != "<final>" {
		t.Errorf("after Close, <final> became %q: state leaked into the next stream", out)
	}
}

// filterReplies are whole streams for the chunking property.
func filterReplies() []string {
	return []string{
		"<thinking><phase id=\"1\"><title>计划</title>写 <final> 还是 </final>？</phase></thinking>\n<final>答案 <AGENT_UI_JSON>[{\"type\":\"card\",\"t\":\"é\"}]</AGENT_UI_JSON>\n" +
			"<AGENT_STATE_PATCH>{\"k\":\"v\"}</AGENT_STATE_PATCH>\n" + okBlock + "</final>",
		"<<<</</thinking><thinking<thinking>></final></</AGENT_UI_JSON<AGENT_UI_JSON></AGENT_UI_JSON</AGENT_UI_JSON>",
		"<thinking>a<AGENT_STATE_PATCH>unterminated <final> <AGENT_UI_JSON>x</AGENT_UI_JSON> </thinking> <final",
		"😀<final>😀</thinking><thinking>😀<final>😀</final>😀</thinking>😀<AGENT_UI_JSON>😀",
	}
}

// TestFilterChunkingInvariance splits replies at every byte, into single bytes, and at
// random places (inside multi-byte runes too): output and blocks never change.
func TestFilterChunkingInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for ri, r := range filterReplies() {
		wantOut, wantBlocks := runFilter(t, []string{r})
		check := func(how string, chunks []string) {
			t.Helper()
			out, blocks := runFilter(t, chunks)
			if out != wantOut || !cmp.Equal(blocks, wantBlocks) {
				t.Fatalf("reply %d split %s %q:\nout    %q\nwant   %q\nblocks %v\nwant   %v", ri, how, chunks, out, wantOut, blocks, wantBlocks)
			}
		}
		check("into bytes", strings.Split(r, ""))
		for i := range len(r) + 1 {
			check("in two", []string{r[:i], r[i:]})
		}
		for range 500 {
			check("at random", randomSplit(rng, r))
		}
	}
}

func randomSplit(rng *rand.Rand, s string) []string {
	var chunks []string
	for len(s) > 0 {
		n := min(len(s), rng.IntN(24))
		chunks = append(chunks, s[:n])
		s = s[n:]
	}
	return chunks
}

// FuzzFilter checks chunking invariance on arbitrary text cut where cuts says.
func FuzzFilter(f *testing.F) {
	for _, r := range filterReplies() {
		f.Add(r, []byte{1, 7, 3, 19, 2})
	}
	f.Add("<thinking><final></thinking>", []byte{0, 1, 0, 2})
	f.Fuzz(func(t *testing.T, s string, cuts []byte) {
		wantOut, wantBlocks := runFilter(t, []string{s})
		var chunks []string
		rest := s
		for _, c := range cuts {
			n := min(len(rest), int(c)%32)
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		out, blocks := runFilter(t, append(chunks, rest))
		if out != wantOut || !cmp.Equal(blocks, wantBlocks) {
			t.Fatalf("chunks %q:\nout    %q\nwant   %q\nblocks %v\nwant   %v", chunks, out, wantOut, blocks, wantBlocks)
		}
	})
}
