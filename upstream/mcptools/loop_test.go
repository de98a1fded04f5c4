package mcptools

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/phaseflow/phaseflow/upstream"
)

// toolCallRound is a Chat Completions stream in which the model calls fn with args.
func toolCallRound(id, fn, args string) string {
	return fmt.Sprintf(`data: {"id":"%[1]s","model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_%[1]s","type":"function","function":{"name":%[2]q,"arguments":%[3]q}}]},"finish_reason":null}]}

data: {"id":"%[1]s","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

`, id, fn, args)
}

const textRound = `data: {"id":"r3","model":"m","choices":[{"index":0,"delta":{"content":"Validated."},"finish_reason":"stop"}]}

data: [DONE]

`

// TestChatLoopWithARealMCPServer runs the Chat Completions tool loop against a real MCP
// server: the model calls validate_strategy, sees it fail, calls it again, then answers.
func TestChatLoopWithARealMCPServer(t *testing.T) {
	e := newEngine(t, "strategy_engine")
	rounds := []string{toolCallRound("r1", "validate_strategy", `{"name":"a"}`), toolCallRound("r2", "validate_strategy", `{"name":"a"}`), textRound}
	var mu sync.Mutex
	var bodies []map[string]any
	chat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, rounds[min(n, len(rounds)-1)])
	}))
	t.Cleanup(chat.Close)
	host := newHost(t, Options{})
	c := upstream.NewChat(upstream.ChatConfig{BaseURL: chat.URL, Tools: host})
	t.Cleanup(c.CloseIdleConnections)

	var got []upstream.Event
	for ev, err := range c.Stream(t.Context(), upstream.Request{Model: "m", Tools: []json.RawMessage{toolObject("strategy_engine", e.url, "tok", "validate_strategy")}}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	call := func(kind upstream.EventKind, id, args, out, errText string) upstream.Event {
		return upstream.Event{Kind: kind, Tool: &upstream.ToolCall{ID: id, ServerLabel: "strategy_engine", Name: "validate_strategy", Arguments: args, Output: out, Error: errText, Failed: errText != ""}}
	}
	want := []upstream.Event{
		{Kind: upstream.EventCreated, ResponseID: "r1", Model: "m"},
		call(upstream.EventToolCallStarted, "call_r1", "", "", ""),
		call(upstream.EventToolCallDone, "call_r1", `{"name":"a"}`, "", "market data timed out"),
		call(upstream.EventToolCallStarted, "call_r2", "", "", ""),
		call(upstream.EventToolCallDone, "call_r2", `{"name":"a"}`, `{"strategy_id":"s-1","args":{"name":"a"}}`, ""),
		{Kind: upstream.EventTextDelta, Delta: "Validated."},
		{Kind: upstream.EventCompleted, ResponseID: "r3", Model: "m"},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	msgs, _ := bodies[2]["messages"].([]any)
	var results []string
	for _, m := range msgs {
		if mm := m.(map[string]any); mm["role"] == "tool" {
			results = append(results, mm["content"].(string))
		}
	}
	if diff := cmp.Diff([]string{"Tool error: market data timed out", `{"strategy_id":"s-1","args":{"name":"a"}}`}, results); diff != "" {
		t.Errorf("tool results sent back to the model (-want +got):\n%s", diff)
	}
}
