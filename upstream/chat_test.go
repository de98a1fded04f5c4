package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// chatServer answers the i-th request with the i-th transcript (the last one again once
// they run out) and records every request body.
type chatServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	header []http.Header
}

func newChatServer(t *testing.T, files ...string) *chatServer {
	t.Helper()
	var bodies [][]byte
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	cs := &chatServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		cs.mu.Lock()
		n := len(cs.bodies)
		cs.bodies, cs.header = append(cs.bodies, body), append(cs.header, r.Header.Clone())
		cs.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", "req_chat")
		_, _ = w.Write(bodies[min(n, len(bodies)-1)])
	}))
	t.Cleanup(cs.Close)
	return cs
}

// requests returns the bodies received so far.
func (cs *chatServer) requests() []map[string]any {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]map[string]any(nil), cs.bodies...)
}

func newTestChat(t *testing.T, srv *httptest.Server, tools ToolHost, rounds int) *ChatClient {
	t.Helper()
	c := NewChat(ChatConfig{BaseURL: srv.URL + "/v1/", APIKey: "sk-test", Tools: tools, MaxToolRounds: rounds})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestChatTranscripts(t *testing.T) {
	created := func(id, model string) Event {
		return Event{Kind: EventCreated, ResponseID: id, Model: model, UpstreamRequestID: "req_chat"}
	}
	delta := func(s string) Event { return Event{Kind: EventTextDelta, Delta: s} }
	done := func(id, model string, u *Usage) Event {
		return Event{Kind: EventCompleted, ResponseID: id, Model: model, Usage: u}
	}
	const gpt = "gpt-4o-mini-2024-07-18"
	tests := []struct {
		file    string
		want    []Event
		wantErr *Error
	}{
		{file: "chat_openai_text.sse", want: []Event{
			created("chatcmpl-1", gpt), delta("Hi"), delta(" there"),
			done("chatcmpl-1", gpt, &Usage{InputTokens: 37, OutputTokens: 11, TotalTokens: 48}),
		}},
		{file: "chat_openrouter_text.sse", want: []Event{ // comments and reasoning kept out
			created("gen-1766000000-abc", "deepseek/deepseek-r1"), delta("Hello"), delta("!"),
			done("gen-1766000000-abc", "deepseek/deepseek-r1", &Usage{InputTokens: 12, OutputTokens: 30, TotalTokens: 42}),
		}},
		{file: "chat_openrouter_error_after_200.sse",
			wantErr: &Error{Kind: KindUnavailable, UpstreamCode: "502", Message: "Provider returned error"}},
		{file: "chat_openrouter_rate_limited_after_200.sse",
			wantErr: &Error{Kind: KindRateLimited, UpstreamCode: "429", Message: "Rate limit exceeded: free-models-per-min."}},
		{file: "chat_mistral_reasoning_parts.sse", want: []Event{ // thinking parts never reach the reply
			created("7f3c1a", "magistral-medium-2507"), delta("Paris"), delta("."),
			done("7f3c1a", "magistral-medium-2507", &Usage{InputTokens: 12, OutputTokens: 28, TotalTokens: 40}),
		}},
		{file: "chat_azure_model_router.sse", want: []Event{ // routed names the model the router chose
			created("chatcmpl-BzA1x", "gpt-4.1-mini-2025-04-14"), delta("Hello"),
			done("chatcmpl-BzA1x", "gpt-4.1-mini-2025-04-14", &Usage{InputTokens: 9, OutputTokens: 1, TotalTokens: 10}),
		}},
		{file: "chat_vllm_text.sse", want: []Event{
			created("chatcmpl-9f2", "Qwen/Qwen3-8B"), delta("Yes."),
			done("chatcmpl-9f2", "Qwen/Qwen3-8B", &Usage{InputTokens: 9, OutputTokens: 5, TotalTokens: 14}),
		}},
		{file: "chat_vllm_error.sse", want: []Event{created("chatcmpl-9f3", "Qwen/Qwen3-8B")},
			wantErr: &Error{Kind: KindProvider, UpstreamCode: "400", Message: "This model's maximum context length is 8192 tokens."}},
		{file: "chat_ollama_text.sse", want: []Event{
			created("chatcmpl-532", "qwen3:8b"), delta("Done"), done("chatcmpl-532", "qwen3:8b", nil),
		}},
		{file: "chat_eof_no_finish.sse", want: []Event{created("chatcmpl-7", "m"), delta("Cut")},
			wantErr: &Error{Kind: KindProvider, Message: "stream ended without a terminal event"}},
		{file: "chat_eof_after_finish.sse", want: []Event{created("chatcmpl-8", "m"), delta("Whole"), done("chatcmpl-8", "m", nil)}},
		{file: "chat_length.sse", want: []Event{created("chatcmpl-9", "m"), delta("Long")},
			wantErr: &Error{Kind: KindTruncated, UpstreamCode: "length", Message: "response incomplete: length"}},
		{file: "chat_openai_tool_calls.sse", want: []Event{created("chatcmpl-2", gpt)}, // no tools were offered
			wantErr: &Error{Kind: KindProvider, Message: "the model asked for tools after 0 rounds of tool calls"}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".sse"), func(t *testing.T) {
			c := newTestChat(t, newChatServer(t, tt.file).Server, nil, 0)
			got, err := collect(t, c.Stream(t.Context(), Request{Model: "m"}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErr, errFields(t, err), ignoreCause); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeTools is a Toolset (and its ToolHost) with fixed functions and a call function.
type fakeTools struct {
	fns    []Function
	call   func(fn, args string) ToolResult
	opened [][]json.RawMessage
	closed int
}

func (f *fakeTools) Open(_ context.Context, tools []json.RawMessage) (Toolset, error) {
	f.opened = append(f.opened, tools)
	return f, nil
}
func (f *fakeTools) Functions() []Function { return f.fns }
func (f *fakeTools) Call(_ context.Context, fn, args string) ToolResult {
	return f.call(fn, args)
}
func (f *fakeTools) Close() error { f.closed++; return nil }

// mcpTool is a Responses-style MCP tool object, as the prompt builder sends it.
var mcpTool = json.RawMessage(`{"type":"mcp","server_label":"market","server_url":"http://127.0.0.1:9/mcp","allowed_tools":["search","quote"],"require_approval":"never"}`)

func marketTools() *fakeTools {
	return &fakeTools{
		fns: []Function{
			{Name: "search", ServerLabel: "market", Tool: "search", Description: "Search", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
			{Name: "quote", ServerLabel: "market", Tool: "quote"},
		},
		call: func(fn, args string) ToolResult {
			if fn == "quote" {
				return ToolResult{Failed: true, Error: "market closed"}
			}
			return ToolResult{Output: "3 results for " + args}
		},
	}
}

func TestChatToolRounds(t *testing.T) {
	tc := func(kind EventKind, id, name, args, out, errText string) Event {
		return Event{Kind: kind, Tool: &ToolCall{ID: id, ServerLabel: "market", Name: name, Arguments: args, Output: out, Error: errText, Failed: errText != ""}}
	}
	tests := []struct {
		name      string
		first     string
		want      []Event
		wantTools []any // the assistant message's tool_calls sent back in round 2
	}{
		{
			name: "OpenAI: two calls at two indexes", first: "chat_openai_tool_calls.sse",
			want: []Event{
				{Kind: EventCreated, ResponseID: "chatcmpl-2", Model: "gpt-4o-mini-2024-07-18", UpstreamRequestID: "req_chat"},
				tc(EventToolCallStarted, "call_A", "search", "", "", ""),
				tc(EventToolCallDone, "call_A", "search", `{"q":"btc"}`, `3 results for {"q":"btc"}`, ""),
				tc(EventToolCallStarted, "call_B", "quote", "", "", ""),
				tc(EventToolCallDone, "call_B", "quote", `{"symbol":"BTC"}`, "", "market closed"),
				{Kind: EventTextDelta, Delta: "Hi"}, {Kind: EventTextDelta, Delta: " there"},
				{Kind: EventCompleted, ResponseID: "chatcmpl-1", Model: "gpt-4o-mini-2024-07-18", Usage: &Usage{InputTokens: 117, OutputTokens: 31, TotalTokens: 148}},
			},
			wantTools: []any{
				map[string]any{"id": "call_A", "type": "function", "function": map[string]any{"name": "search", "arguments": `{"q":"btc"}`}},
				map[string]any{"id": "call_B", "type": "function", "function": map[string]any{"name": "quote", "arguments": `{"symbol":"BTC"}`}},
			},
		},
		{
			name: "Ollama: parallel calls share index 0 and differ by id", first: "chat_ollama_parallel_tools.sse",
			want: []Event{
				{Kind: EventCreated, ResponseID: "chatcmpl-531", Model: "qwen3:8b", UpstreamRequestID: "req_chat"},
				tc(EventToolCallStarted, "call_x1", "search", "", "", ""),
				tc(EventToolCallDone, "call_x1", "search", `{"q":"btc"}`, `3 results for {"q":"btc"}`, ""),
				tc(EventToolCallStarted, "call_x2", "quote", "", "", ""),
				tc(EventToolCallDone, "call_x2", "quote", `{"symbol":"ETH"}`, "", "market closed"),
				{Kind: EventTextDelta, Delta: "Hi"}, {Kind: EventTextDelta, Delta: " there"},
				{Kind: EventCompleted, ResponseID: "chatcmpl-1", Model: "gpt-4o-mini-2024-07-18", Usage: &Usage{InputTokens: 87, OutputTokens: 36, TotalTokens: 123}},
			},
			wantTools: []any{
				map[string]any{"id": "call_x1", "type": "function", "function": map[string]any{"name": "search", "arguments": `{"q":"btc"}`}},
				map[string]any{"id": "call_x2", "type": "function", "function": map[string]any{"name": "quote", "arguments": `{"symbol":"ETH"}`}},
			},
		},
		{
			name: "vLLM: a call without an id gets one", first: "chat_vllm_tool_call_no_id.sse",
			want: []Event{
				{Kind: EventCreated, ResponseID: "chatcmpl-9f4", Model: "Qwen/Qwen3-8B", UpstreamRequestID: "req_chat"},
				tc(EventToolCallStarted, "call_1_1", "search", "", "", ""),
				tc(EventToolCallDone, "call_1_1", "search", `{"q": "eth"}`, `3 results for {"q": "eth"}`, ""),
				{Kind: EventTextDelta, Delta: "Hi"}, {Kind: EventTextDelta, Delta: " there"},
				{Kind: EventCompleted, ResponseID: "chatcmpl-1", Model: "gpt-4o-mini-2024-07-18", Usage: &Usage{InputTokens: 37, OutputTokens: 11, TotalTokens: 48}},
			},
			wantTools: []any{
				map[string]any{"id": "call_1_1", "type": "function", "function": map[string]any{"name": "search", "arguments": `{"q": "eth"}`}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newChatServer(t, tt.first, "chat_openai_text.sse")
			tools := marketTools()
			got, err := collect(t, newTestChat(t, srv.Server, tools, 0).Stream(t.Context(), Request{Model: "m", Input: []InputItem{{Role: "user", Content: "hi"}}, Tools: []json.RawMessage{mcpTool}}))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tools.closed != 1 || len(tools.opened) != 1 {
				t.Errorf("toolset opened %d times and closed %d times, want once each", len(tools.opened), tools.closed)
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2 rounds", len(reqs))
			}
			msgs := reqs[1]["messages"].([]any)
			assistant := msgs[1].(map[string]any)
			if diff := cmp.Diff(tt.wantTools, assistant["tool_calls"]); diff != "" {
				t.Errorf("round 2 assistant tool_calls (-want +got):\n%s", diff)
			}
			last := msgs[len(msgs)-1].(map[string]any)
			if last["role"] != "tool" || !strings.HasPrefix(last["content"].(string), "Tool error: ") && len(tt.wantTools) > 1 {
				t.Errorf("last message of round 2 = %v, want the failed call's tool result", last)
			}
		})
	}
}

func TestChatRequestBody(t *testing.T) {
	srv := newChatServer(t, "chat_openai_text.sse")
	req := Request{
		Model: "gpt-test", Instructions: "Be brief.",
		Input:           []InputItem{{Role: "user", Content: "hello"}, {Role: "assistant", Content: "hi"}, {Role: "user", Content: "again"}},
		Tools:           []json.RawMessage{mcpTool},
		ToolChoice:      "required",
		MaxOutputTokens: 256, PreviousResponseID: "resp_prev",
		Headers: http.Header{"X-Trace": {"t1"}},
	}
	if _, err := collect(t, newTestChat(t, srv.Server, marketTools(), 0).Stream(t.Context(), req)); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model": "gpt-test", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"max_tokens": float64(256), "tool_choice": "required",
		"messages": []any{
			map[string]any{"role": "system", "content": "Be brief."},
			map[string]any{"role": "user", "content": "hello"},
			map[string]any{"role": "assistant", "content": "hi"},
			map[string]any{"role": "user", "content": "again"},
		},
		"tools": []any{
			map[string]any{"type": "function", "function": map[string]any{"name": "search", "description": "Search", "parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}},
			map[string]any{"type": "function", "function": map[string]any{"name": "quote", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
		},
	}
	if diff := cmp.Diff(want, srv.requests()[0]); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	h := srv.header[0]
	if h.Get("Authorization") != "Bearer sk-test" || h.Get("X-Trace") != "t1" || h.Get("Accept") != "text/event-stream" {
		t.Errorf("headers = %v", h)
	}
}

func TestChatToolRoundLimit(t *testing.T) {
	srv := newChatServer(t, "chat_vllm_tool_call_no_id.sse") // asks for a tool every round
	_, err := collect(t, newTestChat(t, srv.Server, marketTools(), 2).Stream(t.Context(), Request{Tools: []json.RawMessage{mcpTool}}))
	if !errors.Is(err, ErrProvider) || !strings.Contains(err.Error(), "after 2 rounds") {
		t.Fatalf("err = %v, want provider_error after 2 rounds", err)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (two tool rounds and the last one)", len(reqs))
	}
	for i, r := range reqs {
		want := any(nil)
		if i == 2 {
			want = "none"
		}
		if r["tool_choice"] != want {
			t.Errorf("request %d tool_choice = %v, want %v", i+1, r["tool_choice"], want)
		}
	}
}

func TestChatHTTPErrorsAndStops(t *testing.T) {
	t.Run("429 before the stream", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
		}))
		t.Cleanup(srv.Close)
		_, err := collect(t, newTestChat(t, srv, nil, 0).Stream(t.Context(), Request{}))
		want := &Error{Kind: KindRateLimited, HTTPStatus: 429, UpstreamCode: "rate_limit_exceeded", Message: "slow down", RetryAfter: 3 * time.Second}
		if diff := cmp.Diff(want, errFields(t, err), ignoreCause); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
	t.Run("consumer break during a tool round runs nothing more", func(t *testing.T) {
		srv := newChatServer(t, "chat_openai_tool_calls.sse", "chat_openai_text.sse")
		tools := marketTools()
		for ev := range newTestChat(t, srv.Server, tools, 0).Stream(t.Context(), Request{Tools: []json.RawMessage{mcpTool}}) {
			if ev.Kind == EventToolCallStarted {
				break
			}
		}
		if n := len(srv.requests()); n != 1 || tools.closed != 1 {
			t.Fatalf("%d requests and %d closes after the break, want 1 and 1", n, tools.closed)
		}
	})
	t.Run("ctx cancelled yields ctx error", func(t *testing.T) {
		srv, gone := stallingChatServer(t)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		_, err := collectQuiet(newTestChat(t, srv, nil, 0).Stream(ctx, Request{}))
		if err != context.DeadlineExceeded {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		waitGone(t, gone)
	})
}

// stallingChatServer sends one chunk and holds the stream open until the client leaves.
func stallingChatServer(t *testing.T) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n")
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	t.Cleanup(srv.Close)
	return srv, gone
}

// FuzzChatDecode feeds arbitrary bytes through the chat round reader: it must never panic,
// must end in either a round or a coded *Error, and must not yield after failing.
func FuzzChatDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "chat_*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "data: [DONE]\n\n", "data: {}\n\n", "data: {\"error\":null}\n\n", "data: {\"error\":\"x\"}\n\n",
		"data: {\"object\":\"error\"}\n\n", "data: {\"error\":{\"code\":\"503\"}}\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1,\"function\":{\"arguments\":{\"a\":1}}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\"},{\"id\":\"b\",\"index\":0}]}}]}\n\ndata: [DONE]\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		turn := &chatTurn{yield: func(Event, error) bool { return true }}
		rd, err := readChatRound(bytes.NewReader(data), turn)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not a coded *Error", err, err)
			}
			return
		}
		if rd == nil {
			t.Fatal("no round and no error")
		}
		for _, c := range rd.calls {
			if c == nil {
				t.Fatal("nil call")
			}
		}
	})
}

// TestFailedToolResultsInTheSessionsLocale: the result a failed call is sent back as is
// written by the request's Say when it has one (the session's locale), the failures
// Phaseflow decides itself included; the tool's own error stays in its words.
func TestFailedToolResultsInTheSessionsLocale(t *testing.T) {
	zh := func(key string, values map[string]string) (string, bool) {
		switch key {
		case "tool_failed":
			return "工具出错：" + values["error"], true
		case ReasonTimeout:
			return "工具没有及时响应", true
		}
		return "", false
	}
	cases := []struct {
		name string
		say  func(string, map[string]string) (string, bool)
		res  ToolResult
		want string
	}{
		{"no Say: English", nil, ToolResult{Failed: true, Error: "market closed"}, "Tool error: market closed"},
		{"the tool's own error", zh, ToolResult{Failed: true, Error: "market closed"}, "工具出错：market closed"},
		{"a time-out Phaseflow decided", zh, ToolResult{Failed: true, Error: "the tool did not answer within 45s", Reason: ReasonTimeout}, "工具出错：工具没有及时响应"},
		{"a reason Say cannot render keeps the detail", zh, ToolResult{Failed: true, Error: "the arguments are not a JSON object", Reason: ReasonBadArguments},
			"工具出错：the arguments are not a JSON object"},
		{"a success is the output", zh, ToolResult{Output: "ok"}, "ok"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &conversation{req: Request{Say: tc.say}}
			c.addResult("call_1", tc.res)
			if got := *c.messages[0].Content; got != tc.want {
				t.Errorf("tool message %q, want %q", got, tc.want)
			}
		})
	}
}
