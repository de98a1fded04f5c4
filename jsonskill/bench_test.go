package jsonskill

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/jsonskill/terminal"
)

// The runner's own work around one model call, for the bound (under 1 ms): the
// prompt rendered from an 800-line snapshot, then a 20 KB answer read, held to the output
// schema and to the skill's rules. docs/json-skills.md has the figures.
func BenchmarkRunnerWorkPerCall(b *testing.B) {
	c := catalog(b)
	ts, _ := c.Get("terminal_state")
	pv, _ := c.Get("post_views")
	var screen strings.Builder
	for i := range 800 {
		fmt.Fprintf(&screen, "⏺ line %d of the agent's long answer, with a few words in it\n", i)
	}
	snap := terminal.Prepare(screen.String(), "[user is typing...]", 800)
	answer := postAnswer20KB(b)
	r := &Runner{catalog: c}
	b.SetBytes(int64(len(answer)))
	for b.Loop() {
		ex := r.newExecution(ts, Request{Locale: "en"}, Input{fields: map[string]any{"terminal": ""}})
		ex.snapshot = snap
		_ = ex.userPrompt(800)
		ex = r.newExecution(pv, Request{Locale: "zh"}, Input{fields: map[string]any{}})
		if p := ex.check(answer); p != nil {
			b.Fatal(p.summary)
		}
	}
}

// postAnswer20KB is a post_views answer of about 20 KB that passes every check.
func postAnswer20KB(b *testing.B) string {
	views := []map[string]any{}
	for i := 0; len(views) < 110; i++ {
		views = append(views, map[string]any{"symbol": fmt.Sprintf("S%d", i), "stance": "bull", "horizon": "1w",
			"confidence": 60, "reasoning": "帖子提到这个资产，语气偏多。", "summary": "a short summary of the post", "drivers": []string{"flows"}})
	}
	out, err := json.Marshal(map[string]any{"reasoning": "帖子整体看多。", "asset_views": views, "assets": []any{},
		"event_tags": []string{}, "stance": "bull", "horizon": "1w", "confidence": 60, "summary": "s", "source_url": nil, "as_of": "2026-11-30"})
	if err != nil {
		b.Fatal(err)
	}
	if len(out) < 20_000 {
		b.Fatalf("the answer is %d bytes", len(out))
	}
	return string(out)
}
