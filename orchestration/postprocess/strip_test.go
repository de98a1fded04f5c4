package postprocess

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// TestProcessIgnoresStrippedBlocks runs a reply through the stream filter, as the stream
// handler does, and checks that an echoed [SESSION STATE] block and invented mcp_ tags are
// only recorded as dropped: no GenUI, no patch, and a valid reply without them.
func TestProcessIgnoresStrippedBlocks(t *testing.T) {
	reply := "<thinking>\n<phase id=\"1\">\n<title>Plan</title>\nRead the state.\n" +
		"[SESSION STATE]\nphase: strategy\nstage: draft\nlocale: en\nartifacts: {\"strategy_status\":\"draft\"}\n[/SESSION STATE]\n" +
		"</phase>\n</thinking>\n<final>\nHere is the plan. " +
		`<mcp_call name="risk_lab.run" args='{"window":20}'>{"ok":true}</mcp_call><mcp_tool/>` +
		"<AGENT_UI_JSON>{\"type\":\"strategy_card\",\"name\":\"x\"}</AGENT_UI_JSON>" +
		"<AGENT_STATE_PATCH>{\"strategy_status\":\"ready\"}</AGENT_STATE_PATCH>\n" +
		"<!-- <serp_queries>\n[\"momentum strategy\",\"risk limits\",\"position sizing\"]\n</serp_queries> -->\n</final>"

	f := thinkingml.NewFilter()
	var text strings.Builder
	var blocks []thinkingml.Block
	for s := reply; len(s) > 0; {
		n := min(7, len(s))
		out, b := f.Write(s[:n])
		text.WriteString(out)
		blocks = append(blocks, b...)
		s = s[n:]
	}
	out, b := f.Close()
	text.WriteString(out)
	blocks = append(blocks, b...)

	for _, leak := range []string{"SESSION STATE", "mcp_"} {
		if strings.Contains(text.String(), leak) {
			t.Fatalf("forwarded text holds %q: %q", leak, text.String())
		}
	}
	if c := Check(text.String(), Options{Locale: "en", SerpQueriesOptional: true}); len(c.Issues) > 0 {
		t.Errorf("problems: %v", c.Issues)
	}
	x := extract(blocks)
	want := []string{droppedSessionState, droppedMCPTag, droppedMCPTag}
	if diff := cmp.Diff(want, x.dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if len(x.genui) != 1 || string(x.patch) != `{"strategy_status":"ready"}` {
		t.Errorf("GenUI %s, patch %s: the AGENT blocks beside the stripped ones were lost", x.genui, x.patch)
	}
}

func TestExtractBlocksRecordsStrippedBlocks(t *testing.T) {
	x := extract([]thinkingml.Block{
		{Name: thinkingml.BlockMCPTag, Body: "<mcp_tool/>"},
		{Name: thinkingml.BlockSessionState, Body: "\nphase: x\n"},
		{Name: thinkingml.BlockMCPTag, Body: `<mcp_call name="x">{}</mcp_call>`},
	})
	want := []string{"stripped an invented mcp tag", "stripped an echoed session state block", "stripped an invented mcp tag"}
	if diff := cmp.Diff(want, x.dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if x.genui != nil || x.patch != nil {
		t.Errorf("stripped blocks were read as GenUI %s or patch %s", x.genui, x.patch)
	}
}
