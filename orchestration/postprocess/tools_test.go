package postprocess

import (
	"testing"

	"github.com/phaseflow/phaseflow/store"
)

// TestToolCallsDropsAMendedFailure: a failure is dropped when the same tool later
// succeeded with the same arguments, compared by meaning.
func TestToolCallsDropsAMendedFailure(t *testing.T) {
	cases := []struct {
		name          string
		failed, later string
		dropped       bool
	}{
		{"the same bytes", `{"a":1,"b":[2]}`, `{"a":1,"b":[2]}`, true},
		{"keys in another order, other spacing", `{"a":1,"b":[2]}`, `{ "b": [2], "a": 1 }`, true},
		{"other arguments", `{"a":1}`, `{"a":2}`, false},
		{"the same text that is not JSON", `not json`, `not json`, true},
		{"different texts that are not JSON", `not json`, `not json!`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := []store.ToolCall{
				{ServerLabel: "s", Name: "t", Arguments: store.JSON(tc.failed), Status: store.ToolFailure},
				{ServerLabel: "s", Name: "t", Arguments: store.JSON(tc.later), Status: store.ToolSuccess},
			}
			got := ToolCalls(calls)
			if dropped := len(got) == 1; dropped != tc.dropped {
				t.Errorf("failure dropped = %v, want %v (kept %d calls)", dropped, tc.dropped, len(got))
			}
		})
	}
}
