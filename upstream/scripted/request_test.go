package scripted

import (
	"encoding/json"
	"testing"
)

func TestLatestUserTextSkipsTheCarryoverBlock(t *testing.T) {
	cases := []struct{ name, input, want string }{
		{"plain string", `"hello [[scenario:bad_patch]]"`, "hello [[scenario:bad_patch]]"},
		{"last user item", `[{"role":"user","content":"old"},{"role":"assistant","content":"a"},{"role":"user","content":"new"}]`, "new"},
		{"carryover quoting an earlier marker", `[{"role":"user","content":"[CARRYOVER]\nuser: revise [[scenario:stress_feedback_revise]]\n[/CARRYOVER]\n\nBacktest again"}]`, "Backtest again"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := latestUserText(json.RawMessage(tc.input)); got != tc.want {
				t.Fatalf("latestUserText = %q, want %q", got, tc.want)
			}
		})
	}
}
