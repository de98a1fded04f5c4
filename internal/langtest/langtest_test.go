package langtest

import (
	"slices"
	"testing"
)

func TestEnglishRuns(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"an English sentence in Chinese text", "对话已从 strategy 阶段进入（Stress test asked for a revision; back to strategy.）", []string{"Stress test asked for a revision"}},
		{"identifiers, code and tags are not prose", "调用 `run the backtest now` 和 run_backtest、<final>、SMA20 以及 {{missing_fields}}", nil},
		{"three words are a name, not a sentence", "对当前阶段产物的 JSON merge patch。以及 Kweichow Moutai stock", nil},
		{"capitals end a run", "the BTC momentum strategy is good", []string{"momentum strategy is good"}},
		{"a line break ends a run", "phase: strategy\nstage: draft\nlocale: zh", nil},
		{"URLs are not prose", "见 https://example.com/a/long/path/with/many/words 。", nil},
		{"hyphens and commas keep a run", "a stop-loss, then a trailing stop", []string{"a stop loss then a trailing stop"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := EnglishRuns(tc.text)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("EnglishRuns = %q, want %q", got, tc.want)
			}
		})
	}
}
