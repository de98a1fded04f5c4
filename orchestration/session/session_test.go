package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/store"
)

func TestNormalizeLocale(t *testing.T) {
	cases := map[string]string{"zh": "zh", "zh-CN,zh;q=0.9": "zh", "ZH-tw": "zh", "en-US": "en", "": "en", "fr": "en"}
	for in, want := range cases {
		if got := NormalizeLocale(in); got != want {
			t.Errorf("NormalizeLocale(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTitleFrom(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"first line only", "Draft a strategy\nwith details", "Draft a strategy"},
		{"trimmed", "  hi  ", "hi"},
		{"long lines are cut with an ellipsis", strings.Repeat("a", 80), strings.Repeat("a", 59) + "…"},
		{"cut by characters, not bytes", strings.Repeat("策", 70), strings.Repeat("策", 59) + "…"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TitleFrom(tc.in); got != tc.want {
				t.Fatalf("TitleFrom = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMetadataKeepsUnknownKeys(t *testing.T) {
	raw := store.JSON(`{"turn_counts":{"strategy":2},"client_flag":{"x":1}}`)
	m, err := DecodeMetadata(raw)
	if err != nil {
		t.Fatal(err)
	}
	m.TurnCounts["strategy"]++
	m.Carryover = &carryover.Block{From: "strategy", To: "stress_test", Text: "t"}
	out, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got["client_flag"] == nil || got["turn_counts"].(map[string]any)["strategy"] != 3.0 || got["carryover"] == nil {
		t.Fatalf("encoded metadata = %s", out)
	}
}

func TestArtifactsFillKeepsValues(t *testing.T) {
	a, err := DecodeArtifacts(store.JSON(`{"strategy":{"strategy_status":"validated"}}`))
	if err != nil {
		t.Fatal(err)
	}
	block := a.Fill("strategy", map[string]any{"strategy_status": "draft", "backtest_status": "none"})
	if block["strategy_status"] != "validated" || block["backtest_status"] != "none" {
		t.Fatalf("Fill = %v", block)
	}
	if a.Fill("deployment", nil) == nil {
		t.Fatal("a missing phase block was not created")
	}
}
