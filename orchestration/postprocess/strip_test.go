package postprocess

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/phaseflow/phaseflow/orchestration/stream"
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
	o := Process(stream.Result{Text: text.String(), Blocks: blocks}, Options{Locale: "en", SerpQueriesOptional: true})
	if p := o.Problems(); len(p) > 0 {
		t.Errorf("problems: %v", p)
	}
	want := []string{droppedSessionState, droppedMCPTag, droppedMCPTag}
	if diff := cmp.Diff(want, o.Dropped); diff != "" {
		t.Errorf("Dropped (-want +got):\n%s", diff)
	}
	if len(o.GenUI) != 1 || string(o.StatePatch) != `{"strategy_status":"ready"}` {
		t.Errorf("GenUI %s, patch %s: the AGENT blocks beside the stripped ones were lost", o.GenUI, o.StatePatch)
	}
}

func TestExtractBlocksRecordsStrippedBlocks(t *testing.T) {
	var o Outcome
	o.extractBlocks([]thinkingml.Block{
		{Name: thinkingml.BlockMCPTag, Body: "<mcp_tool/>"},
		{Name: thinkingml.BlockSessionState, Body: "\nphase: x\n"},
		{Name: thinkingml.BlockMCPTag, Body: `<mcp_call name="x">{}</mcp_call>`},
	})
	want := []string{"stripped an invented mcp tag", "stripped an echoed session state block", "stripped an invented mcp tag"}
	if diff := cmp.Diff(want, o.Dropped); diff != "" {
		t.Errorf("Dropped (-want +got):\n%s", diff)
	}
	if o.GenUI != nil || o.StatePatch != nil {
		t.Errorf("stripped blocks were read as GenUI %s or patch %s", o.GenUI, o.StatePatch)
	}
}
