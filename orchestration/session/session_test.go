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

func TestShortTitle(t *testing.T) {
	cases := []struct{ name, in, locale, want string }{
		{"first line only", "Draft a strategy\nwith details", "en", "Draft a strategy"},
		{"trimmed and spaces folded", "  hi   there  ", "en", "hi there"},
		{"long English is cut at a word", "Please draft a momentum strategy for bitcoin on four hour candles with a trailing stop", "en",
			"Please draft a momentum strategy for bitcoin on…"},
		{"a word longer than half the title is cut", strings.Repeat("a", 80), "en", strings.Repeat("a", 48) + "…"},
		{"Chinese is cut by characters, shorter", "帮我设计一个比特币的动量策略，用四小时K线并且加上移动止损", "zh", "帮我设计一个比特币的动量策略，用…"},
		{"short Chinese stays", "帮我设计一个策略", "zh", "帮我设计一个策略"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShortTitle(tc.in, tc.locale); got != tc.want {
				t.Fatalf("ShortTitle = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAutoTitle(t *testing.T) {
	cases := []struct {
		name                   string
		current, source        string
		strategy, text, locale string
		want                   string
		changed                bool
	}{
		{"an untitled session takes the strategy's name", "", "", "BTC momentum", "Draft something", "en", "BTC momentum", true},
		{"else a short form of the message", "", "", "", "Draft something", "en", "Draft something", true},
		{"a title the user set is kept", "My plan", "", "BTC momentum", "Draft", "en", "", false},
		{"a title the server set gives way to the strategy's name", "Draft something", "auto", "BTC momentum", "x", "en", "BTC momentum", true},
		{"a server title is not replaced by a later message", "Draft something", "auto", "", "tell me more", "en", "", false},
		{"the same title is no change", "BTC momentum", "auto", "BTC momentum", "x", "en", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			meta := Metadata{TitleSource: tc.source}
			got, changed := AutoTitle(tc.current, &meta, tc.strategy, tc.text, tc.locale)
			if got != tc.want || changed != tc.changed || (changed && meta.TitleSource != "auto") {
				t.Fatalf("AutoTitle = %q, %v (source %q); want %q, %v", got, changed, meta.TitleSource, tc.want, tc.changed)
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
