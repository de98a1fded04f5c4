package postprocess

import (
	"bytes"
	"encoding/json"

	"github.com/phaseflow/phaseflow/store"
)

// ToolCalls applies the ledger's rule to a turn's MCP calls: every call is kept, except a
// failure of a call that later succeeded with the same tool and arguments (the model
// retried it, in the same attempt or the next; the front end should not show an error
// that was mended). It is what completed.metadata.tool_calls, the error event and the
// stored message show, whatever became of the turn.
func ToolCalls(calls []store.ToolCall) []store.ToolCall {
	out := make([]store.ToolCall, 0, len(calls))
	for i, c := range calls {
		if c.Status == store.ToolFailure && succeededLater(calls[i+1:], c) {
			continue
		}
		out = append(out, c)
	}
	return out
}

func succeededLater(rest []store.ToolCall, failed store.ToolCall) bool {
	for _, c := range rest {
		if c.Status == store.ToolSuccess && c.ServerLabel == failed.ServerLabel && c.Name == failed.Name && sameJSON(c.Arguments, failed.Arguments) {
			return true
		}
	}
	return false
}

// sameJSON compares two JSON values by meaning, so key order and spacing do not matter.
// The same bytes mean the same (a retried call usually repeats its arguments exactly), so
// only texts that differ are decoded and encoded again.
func sameJSON(a, b store.JSON) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}
