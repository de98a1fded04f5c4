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

		// An echoed [SESSION STATE] block.
		{name: "session state block withheld",
			chunks: []string{"<final>a\n[SESSION STATE]\nphase: strategy\nartifacts: {\"x\":[1]}\n[/SESSION STATE]\nb</final>"},
			out:    "<final>a\n\nb</final>", blocks: []Block{{BlockSessionState, "\nphase: strategy\nartifacts: {\"x\":[1]}\n"}}},
		{name: "session state body hides thinking and final tags",
			chunks: []string{"<thinking>a[SESSION STATE]<final></thinking>[/SESSION STATE]<final>b</thinking><final>"},
			out:    "<thinking>a&lt;final&gt;b</thinking><final>", blocks: []Block{{BlockSessionState, "<final></thinking>"}}},
		{name: "session state split byte by byte",
			chunks: strings.Split("x[[SESSION STATE][/SESSION STATE ][/SESSION STATE]]y", ""),
			out:    "x[]y", blocks: []Block{{BlockSessionState, "[/SESSION STATE ]"}}},
		{name: "markdown brackets and look-alikes pass",
			chunks: []string{"[link](u) [SESSION] [session state] [SESSION  STATE] [/SESSION STATE] [SESSION_STATE]"},
			out:    "[link](u) [SESSION] [session state] [SESSION  STATE] [/SESSION STATE] [SESSION_STATE]"},
		{name: "unterminated session state is forwarded as text",
			chunks: []string{"<final>[SESSION STATE]\nphase: x<AGENT_UI_JSON>[]</AGENT_UI_JSON>", "</final>"},
			out:    "<final>[SESSION STATE]\nphase: x</final>", blocks: []Block{{BlockUIJSON, "[]"}}},
		{name: "held session state start flushed at close", chunks: []string{"see [SESSION ST"}, out: "see [SESSION ST"},

		// Invented mcp_ tags.
		{name: "mcp element withheld with attributes and content",
			chunks: []string{`<final>a<mcp_call name="x" args='{"q":"a>b"}'>{"q":1}</mcp_call>b</final>`},
			out:    "<final>ab</final>", blocks: []Block{{BlockMCPTag, `<mcp_call name="x" args='{"q":"a>b"}'>{"q":1}</mcp_call>`}}},
		{name: "self-closing mcp tags withheld",
			chunks: []string{"a<mcp_tool/>b<mcp_tool name=\"x\" />c<mcp_>d</mcp_>e"},
			out:    "abce", blocks: []Block{{BlockMCPTag, "<mcp_tool/>"}, {BlockMCPTag, `<mcp_tool name="x" />`}, {BlockMCPTag, "<mcp_>d</mcp_>"}}},
		{name: "mcp end tag must name the element and may hold white space",
			chunks: []string{"<mcp_a><mcp_b>x</mcp_b></mcp_ab></mcp_a x></mcp_a\n >z"},
			out:    "z", blocks: []Block{{BlockMCPTag, "<mcp_a><mcp_b>x</mcp_b></mcp_ab></mcp_a x></mcp_a\n >"}}},
		{name: "end tag in an attribute does not end the element",
			chunks: []string{`<mcp_x a="</mcp_x>">b</mcp_x>c`},
			out:    "c", blocks: []Block{{BlockMCPTag, `<mcp_x a="</mcp_x>">b</mcp_x>`}}},
		{name: "mcp element body hides thinking and final tags",
			chunks: []string{"<thinking>a<mcp_call></thinking><final></mcp_call><final></thinking>"},
			out:    "<thinking>a&lt;final&gt;</thinking>", blocks: []Block{{BlockMCPTag, "<mcp_call></thinking><final></mcp_call>"}}},
		{name: "final after an mcp tag inside thinking is escaped",
			chunks: []string{"<thinking><mcp_", "x/><fin", "al></thinking><final>"},
			out:    "<thinking>&lt;final&gt;</thinking><final>", blocks: []Block{{BlockMCPTag, "<mcp_x/>"}}},
		{name: "mcp look-alikes pass",
			chunks: []string{"<mcp-x> <mcpx/> <MCP_x/> <mcp_x/y> <mcp_x:y/> <mcp_x!> <mcp_x a=\"1\" < b> </mcp_x> <mcp"},
			out:    "<mcp-x> <mcpx/> <MCP_x/> <mcp_x/y> <mcp_x:y/> <mcp_x!> <mcp_x a=\"1\" < b> </mcp_x> <mcp"},
		{name: "unquoted and valueless attributes as the validator reads them",
			chunks: []string{"<mcp_x a=1 b c = 'd' =/>"}, blocks: []Block{{BlockMCPTag, "<mcp_x a=1 b c = 'd' =/>"}}},
		{name: "mcp opening tag at the length limit is withheld",
			chunks: []string{"<mcp_x a=\"" + strings.Repeat("v", maxMCPTag-len(`<mcp_x a=""/>`)) + "\"/>!"},
			out:    "!", blocks: []Block{{BlockMCPTag, "<mcp_x a=\"" + strings.Repeat("v", maxMCPTag-len(`<mcp_x a=""/>`)) + "\"/>"}}},
		{name: "mcp opening tag over the length limit is text",
			chunks: []string{"<mcp_x a=\"" + strings.Repeat("v", maxMCPTag-len(`<mcp_x a=""/>`)+1) + "\"/>!"},
			out:    "<mcp_x a=\"" + strings.Repeat("v", maxMCPTag-len(`<mcp_x a=""/>`)+1) + "\"/>!"},
		{name: "unterminated mcp element is re-read as text",
			chunks: []string{"<thinking><mcp_call a=\"<final>\">x<final><mcp_t/></thinking>"},
			out:    "<thinking><mcp_call a=\"&lt;final&gt;\">x&lt;final&gt;</thinking>", blocks: []Block{{BlockMCPTag, "<mcp_t/>"}}},
		{name: "incomplete mcp opening is re-read as text",
			chunks: []string{"<thinking><mcp_call a=\"<final> [SESSION STATE]x[/SESSION STATE]"},
			out:    "<thinking><mcp_call a=\"&lt;final&gt; ", blocks: []Block{{BlockSessionState, "x"}}},
		{name: "blocks inside blocks are body",
			chunks: []string{"<AGENT_UI_JSON>[SESSION STATE]<mcp_x/></AGENT_UI_JSON>[SESSION STATE]<mcp_x></mcp_x>[/SESSION STATE]<mcp_y>[SESSION STATE]</mcp_y>"},
			blocks: []Block{{BlockUIJSON, "[SESSION STATE]<mcp_x/>"}, {BlockSessionState, "<mcp_x></mcp_x>"}, {BlockMCPTag, "<mcp_y>[SESSION STATE]</mcp_y>"}}},
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
		{name: "lone [ may start a session state", chunk: "a [", want: "a "},
		{name: "session state start held", chunk: "a [SESSION S", want: "a "},
		{name: "bracket released when it cannot be a session state", before: "[SESSION", chunk: "]", want: "[SESSION]"},
		{name: "markdown link passes", chunk: "[a](b)", want: "[a](b)"},
		{name: "session state body withheld", before: "[SESSION STATE]", chunk: "phase: x\n[/SESSION STATE", want: ""},
		{name: "mcp tag start held", chunk: "x<mc", want: "x"},
		{name: "mcp tag with open attributes held", chunk: `x<mcp_call name="a>b`, want: "x"},
		{name: "mcp look-alike passes", chunk: "x<mcq", want: "x<mcq"},
		{name: "mcp tag released at a < outside quotes", before: `<mcp_call name="x"`, chunk: " <b", want: `<mcp_call name="x" <b`},
		{name: "mcp tag released at a bad name byte", before: "<mcp_call", chunk: ":", want: "<mcp_call:"},
		{name: "mcp element body withheld", before: "<mcp_call>", chunk: "{}</mcp_call", want: ""},
		{name: "text after mcp element passes", before: "<mcp_call>{}</mcp_call ", chunk: "> ok", want: " ok"},
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
		"<thinking>计划 [SESSION STATE]\nphase: strategy\nartifacts: {\"a\":\"<final>\"}\n[/SESSION STATE] <final> " +
			"<mcp_call name=\"risk_lab.run\" args='{\"q\":\"a>b\"}'>{\"x\":1}</mcp_call > <mcp_tool/></thinking>\n" +
			"<final>[链接](u) [SESSION] <mcp_x a=1 b/> <mcp-y/> <mcp_z/w> [/SESSION STATE] </mcp_x> " + okBlock + "</final>",
		"[[SESSION STATE[SESSION STATE]][/SESSION STATE][SESSION STATE]<mcp_a></mcp_a>[/SESSION STATE]<mcp_a>[/SESSION STATE]</mcp_a></mcp_a",
		"<thinking><mcp_a x=\"</mcp_a>\" y='<final>'><final></mcp_a\t><mcp_b <final> <mcp_c a=\"<final>",
		"<thinking><mcp_e><final>[SESSION STATE]<final>[/SESSION STATE]</mcp_e [SESSION STATE]<final>",
		"<mcp_long a=\"" + strings.Repeat("v", maxMCPTag-16) + "\"/>x<mcp_long a=\"" + strings.Repeat("w", maxMCPTag-15) + "\"/>",
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
	f.Add("<thinking>[SESSION STATE]<final>[/SESSION STATE]<final></thinking>[SESSION STATE", []byte{3, 9, 1, 1, 30})
	f.Add("<thinking><mcp_call a='>' b=\"<final>\"><final></mcp_call ><mcp_t/><final><mcp_u x=\"", []byte{2, 5, 8, 13, 1, 4})
	f.Add("<mcp_a><mcp_a></mcp_a></mcp_a><mcp_b =/><mcp_c a=1/></mcp_c>", []byte{6, 0, 7, 21})
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
