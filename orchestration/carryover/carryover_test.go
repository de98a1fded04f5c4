package carryover

import (
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
)

func TestTakeOnce(t *testing.T) {
	b := &Block{From: "strategy", To: "stress_test", Text: "strategy s1 confirmed"}
	if got := Take(b, "strategy"); got != "" {
		t.Fatalf("Take for another phase = %q, want nothing", got)
	}
	if got := Take(b, "stress_test"); got != "strategy s1 confirmed" {
		t.Fatalf("first Take = %q", got)
	}
	if got := Take(b, "stress_test"); got != "" {
		t.Fatalf("second Take = %q, want nothing (already used)", got)
	}
	if got := Take(nil, "stress_test"); got != "" {
		t.Fatalf("Take(nil) = %q", got)
	}
}

// TestBuild: the block a move leaves, rendered from the old phase's block and the last
// exchanges in the session's locale.
func TestBuild(t *testing.T) {
	long := strings.Repeat("word ", 100)
	cases := []struct {
		name      string
		locale    string
		exchanges []store.Message
		want      []string // in the block's text
		notWant   []string
	}{
		{name: "labels each side and keeps only a reply's final answer", locale: "en",
			exchanges: []store.Message{{Role: store.RoleUser, Content: "confirm it"},
				{Role: store.RoleAssistant, Content: "<thinking>private</thinking><final>Confirmed.<!-- <serp_queries>x</serp_queries> --></final>"}},
			want:    []string{"User: confirm it", "Assistant: Confirmed.", `"strategy_id":"st1"`, "from the strategy phase to the stress_test phase (confirmed)"},
			notWant: []string{"private", "serp_queries"}},
		{name: "the last four exchanges only, each cut", locale: "en",
			exchanges: []store.Message{{Role: store.RoleUser, Content: "first"}, {Role: store.RoleUser, Content: "second"},
				{Role: store.RoleUser, Content: "third"}, {Role: store.RoleUser, Content: "fourth"}, {Role: store.RoleUser, Content: long}},
			want: []string{"User: second", "…"}, notWant: []string{"User: first", long}},
		{name: "in Chinese", locale: "zh", exchanges: []store.Message{{Role: store.RoleUser, Content: "确认"}},
			want: []string{"确认"}, notWant: []string{"User:", "The conversation"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			b, err := Build(skills.New(), tc.locale, Move{From: "strategy", To: "stress_test", Reason: "confirmed"},
				map[string]any{"strategy_id": "st1"}, tc.exchanges, at)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.Text, w) {
					t.Errorf("the block lacks %q:\n%s", w, b.Text)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(b.Text, w) {
					t.Errorf("the block holds %q:\n%s", w, b.Text)
				}
			}
			if b.From != "strategy" || b.To != "stress_test" || b.Used || !b.CreatedAt.Equal(at) {
				t.Errorf("block %+v", b)
			}
		})
	}
}

// TestReasonAndRebuild: a handler's reason is filled from the old block; a waiting block
// is rendered again over the block the confirm route changed, keeping reason and exchanges.
func TestReasonAndRebuild(t *testing.T) {
	lib := skills.New()
	reason, err := Reason(lib, "en", "deployment/moves/blocked", map[string]any{"blocker_code": "risk_guard_failed", "n": 3})
	if err != nil || reason != "the deployment was blocked (risk_guard_failed) and goes back to the strategy" {
		t.Fatalf("Reason = %q, %v", reason, err)
	}
	if _, err := Reason(lib, "en", "no/such/skill", nil); err == nil {
		t.Fatal("a missing skill gave a reason")
	}
	b, err := Build(lib, "en", Move{From: "strategy", To: "stress_test", Reason: "confirmed"}, map[string]any{"strategy_status": "validated"},
		[]store.Message{{Role: store.RoleUser, Content: "go"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(lib, "en", b, map[string]any{"strategy_status": "confirmed"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.Text, `"strategy_status":"confirmed"`) || !strings.Contains(b.Text, "User: go") || !strings.Contains(b.Text, "(confirmed)") {
		t.Fatalf("rebuilt block:\n%s", b.Text)
	}
}
