package prompt

import (
	"slices"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/stream"
)

// The turn's policy: the request's values over the server's settings; the output cap and
// tools as the plan decided them (the request can only lower the cap, in capOutput).
func TestPolicy(t *testing.T) {
	cfg := Config{ReplyPolicy: stream.PolicyRetry}
	plan := &Plan{MaxOutputTokens: 300, ToolChoice: "auto", AllowedTools: []string{"run_backtest"}}
	report, yes, n := stream.PolicyReport, true, 300
	cases := []struct {
		name          string
		request       *RuntimePolicy
		reply         string
		serpOptional  bool
		wantRequested []string
	}{
		{"no request policy", nil, "retry", false, nil},
		{"an empty one", &RuntimePolicy{}, "retry", false, nil},
		{"every key", &RuntimePolicy{ReplyPolicy: &report, SerpOptional: &yes, MaxOutputTokens: &n}, "report", true,
			[]string{"reply_policy", "serp_optional", "max_output_tokens"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := plan.policy(cfg, tc.request)
			if got.ReplyPolicy != tc.reply || got.SerpOptional != tc.serpOptional || !slices.Equal(got.Requested, tc.wantRequested) {
				t.Fatalf("policy %+v, want reply %s, serp optional %v, requested %v", got, tc.reply, tc.serpOptional, tc.wantRequested)
			}
			if got.MaxOutputTokens != 300 || got.ToolChoice != "auto" || !slices.Equal(got.AllowedTools, []string{"run_backtest"}) {
				t.Fatalf("policy %+v: the plan's cap and tools were not kept", got)
			}
		})
	}
}
