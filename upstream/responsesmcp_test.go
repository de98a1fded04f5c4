package upstream

import (
	"testing"

	"github.com/valyala/fastjson"
)

// mcpItemFrames are output_item frames: the shapes servers send, and the ones the fast path
// must leave to encoding/json or read exactly as it does.
var mcpItemFrames = []struct {
	name, event, data string
	fast              bool // mcpItemOf answers
}{
	{"added, as OpenAI sends it", "response.output_item.added", `{"type":"response.output_item.added","sequence_number":3,"output_index":1,"item":{"id":"mcp_1","type":"mcp_call","status":"in_progress","approval_request_id":null,"arguments":"","error":null,"name":"validate_strategy","output":null,"server_label":"strategy_engine"}}`, true},
	{"done with its output", "response.output_item.done", `{"type":"response.output_item.done","sequence_number":9,"output_index":1,"item":{"id":"mcp_1","type":"mcp_call","status":"completed","arguments":"{\"name\":\"BTC \\\"momentum\\\"\"}","error":null,"name":"validate_strategy","output":"{\"valid\":true,\"note\":\"\u00e9\\n\"}","server_label":"strategy_engine"}}`, true},
	{"done with an error text", "response.output_item.done", `{"type":"response.output_item.done","item":{"id":"mcp_1","type":"mcp_call","status":"failed","error":"tool said no","output":null}}`, true},
	{"done, failed by status", "response.output_item.done", `{"type":"response.output_item.done","item":{"id":"m","type":"mcp_call","status":"failed"}}`, true},
	{"typed by the SSE name only", "response.output_item.done", `{"item":{"id":"m","type":"mcp_call","output":"x"}}`, true},
	{"a later null item type keeps mcp_call", "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"mcp_call","id":"x","type":null}}`, true},
	{"a later null name keeps the earlier one", "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"mcp_call","name":"n","name":null}}`, true},
	{"a later null output empties it", "response.output_item.done", `{"type":"response.output_item.done","item":{"type":"mcp_call","output":"x","output":null}}`, true},
	{"an error object", "response.output_item.done", `{"type":"response.output_item.done","item":{"type":"mcp_call","error":{"type":"http_error","code":500,"message":"down"}}}`, false},
	{"an output object", "response.output_item.done", `{"type":"response.output_item.done","item":{"type":"mcp_call","output":{"valid":true}}}`, false},
	{"an output number", "response.output_item.done", `{"type":"response.output_item.done","item":{"type":"mcp_call","output":1}}`, false},
	{"a message item", "response.output_item.done", `{"type":"response.output_item.done","item":{"type":"message","content":[]}}`, false},
	{"repeated items merge", "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"mcp_call","id":"x"},"item":{"id":"y"}}`, false},
	{"a case-folded item key", "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"mcp_call","Name":"n"}}`, false},
	{"a case-folded top-level key", "response.output_item.added", `{"type":"response.output_item.added","Item":{"type":"mcp_call"}}`, false},
	{"arguments that are no string", "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"mcp_call","arguments":{}}}`, false},
	{"an item_id that is no string", "response.output_item.added", `{"type":"response.output_item.added","item_id":5,"item":{"type":"mcp_call"}}`, false},
	{"an item that is no object", "response.output_item.added", `{"type":"response.output_item.added","item":"mcp_call"}`, false},
	{"another event", "response.mcp_call.completed", `{"type":"response.mcp_call.completed","item":{"type":"mcp_call"}}`, false},
	{"a type the SSE name contradicts", "response.output_item.added", `{"type":"response.output_item.done","item":{"type":"mcp_call","output":"o"}}`, true},
}

// TestMCPItemOf checks the fast path against encoding/json's reading of the same frames.
func TestMCPItemOf(t *testing.T) {
	for _, tc := range mcpItemFrames {
		t.Run(tc.name, func(t *testing.T) { checkFastPath(t, tc.event, tc.data, tc.fast, mcpItemAnswers) })
	}
}

// mcpItemAnswers is mcpItemOf as a fastPath.
func mcpItemAnswers(o *fastjson.Object, name string) bool {
	typ, item, ok := ignoredFields(o, name)
	if !ok {
		return false
	}
	_, _, ok = mcpItemOf(typ, item)
	return ok
}

// FuzzMCPItem holds the fast path to encoding/json: whenever it answers, the general path
// must read the same event.
func FuzzMCPItem(f *testing.F) {
	for _, tc := range mcpItemFrames {
		f.Add([]byte(tc.data), tc.event)
	}
	f.Fuzz(func(t *testing.T, data []byte, name string) { fuzzFastPath(t, data, name, mcpItemAnswers) })
}
