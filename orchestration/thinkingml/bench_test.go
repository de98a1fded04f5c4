package thinkingml

import (
	"fmt"
	"strings"
	"testing"
)

// benchReply builds a valid reply of about size bytes, mixing English and Chinese prose,
// Markdown look-alikes (a < b, R&D, entities) and many phases, like a long real answer.
func benchReply(size int) string {
	var th, fin strings.Builder
	for i := 1; th.Len()+fin.Len() < size-200; i++ {
		fmt.Fprintf(&th, "<phase id=\"%d\">\n<title>Step %d 分析</title>\nCompare a < b and x<5 for R&D; 考虑恢复与训练频率 &amp; volume.\n</phase>\n", i, i)
		fmt.Fprintf(&fin, "- **Day %d**: squat 5x5, bench &lt;80%%&gt; 1RM, 休息 90 秒; see <https://example.com/%d>\n", i, i)
	}
	return "<thinking>\n" + th.String() + "</thinking>\n<final>\n# Plan\n\n" + fin.String() + "\n" +
		block(`["three-day split routine","push pull legs schedule","三分化训练频率"]`) + "\n</final>\n"
}

func benchmarkValidate(b *testing.B, size int) {
	r := benchReply(size)
	if res := Validate(r, Options{}); !res.Valid {
		b.Fatalf("benchmark reply is invalid: %+v", res.Errors)
	}
	b.SetBytes(int64(len(r)))
	b.ReportAllocs()
	for b.Loop() {
		Validate(r, Options{})
	}
}

func BenchmarkValidate2KB(b *testing.B)  { benchmarkValidate(b, 2<<10) }
func BenchmarkValidate20KB(b *testing.B) { benchmarkValidate(b, 20<<10) }

// BenchmarkFilterChunk20B measures one Write of a 20-byte chunk (ns/op is per chunk), the
// stream being a long reply with tags, <final> inside thinking, AGENT blocks, an echoed
// [SESSION STATE] block and invented mcp_ tags.
func BenchmarkFilterChunk20B(b *testing.B) {
	r := strings.Replace(benchReply(8<<10), "</thinking>", "Mention <final> here.</thinking>", 1)
	r = strings.Replace(r, "# Plan", "# Plan <AGENT_UI_JSON>[{\"type\":\"card\"}]</AGENT_UI_JSON><AGENT_STATE_PATCH>{\"a\":1}</AGENT_STATE_PATCH>", 1)
	r = strings.Replace(r, "<thinking>\n", "<thinking>\n[SESSION STATE]\nphase: strategy\nstage: draft\nlocale: en\nartifacts: {\"strategy_status\":\"draft\"}\n[/SESSION STATE]\n", 1)
	r = strings.Replace(r, "\n</final>", "<mcp_call name=\"risk_lab.run\" args='{\"window\":20}'>{\"ok\":true}</mcp_call><mcp_tool/>\n</final>", 1)
	var chunks []string
	for s := r; len(s) > 0; {
		n := min(20, len(s))
		chunks, s = append(chunks, s[:n]), s[n:]
	}
	f := NewFilter()
	b.SetBytes(20)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f.Write(chunks[i])
		if i++; i == len(chunks) {
			f.Close()
			i = 0
		}
	}
}
