package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/phaseflow/phaseflow/upstream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// engine is a real MCP server built with the SDK: a small strategy_engine whose
// validate_strategy fails on its first call, plus tools for the edge cases. It records the
// x-mcp-context header of every HTTP request.
type engine struct {
	url      string
	calls    atomic.Int32
	mu       sync.Mutex
	contexts []string
}

func newEngine(t *testing.T, label string) *engine {
	t.Helper()
	e := &engine{}
	srv := mcp.NewServer(&mcp.Implementation{Name: label, Version: "test"}, nil)
	obj := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)
	srv.AddTool(&mcp.Tool{Name: "validate_strategy", Description: "Check a strategy.", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if e.calls.Add(1) == 1 {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "market data timed out"}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"strategy_id":"s-1","args":` + string(req.Params.Arguments) + `}`}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "run_backtest", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 300)}}}, nil
	})
	// The slow tool waits until the call is cancelled or the test ends: the SDK does not
	// always cancel a server-side handler whose client gave up, and httptest's Close waits
	// for every handler, so without the release a lost cancel would hang the cleanup.
	release := make(chan struct{})
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: obj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return nil, errors.New("test over")
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.contexts = append(e.contexts, r.Header.Get("X-Mcp-Context"))
		e.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) }) // runs before ts.Close
	e.url = ts.URL + "/mcp"
	return e
}

// seenContexts returns the distinct x-mcp-context values the server received.
func (e *engine) seenContexts() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, c := range e.contexts {
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// toolObject is the Responses-style MCP tool object of a server.
func toolObject(label, url, token string, allowed ...string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"type": "mcp", "server_label": label, "server_url": url, "allowed_tools": allowed,
		"require_approval": "never", "headers": map[string]string{"x-mcp-context": token},
	})
	return b
}

func newHost(t *testing.T, opts Options) *Host {
	t.Helper()
	h := New(opts)
	t.Cleanup(h.CloseIdleConnections)
	return h
}

func TestOpenListsAllowedToolsAndSendsHeaders(t *testing.T) {
	a, b := newEngine(t, "strategy_engine"), newEngine(t, "risk_lab")
	refused := closedURL(t)
	h := newHost(t, Options{})
	set, err := h.Open(t.Context(), []json.RawMessage{
		toolObject("strategy_engine", a.url, "tok-a", "validate_strategy", "run_backtest"),
		toolObject("risk_lab", b.url, "tok-b", "validate_strategy"),
		toolObject("deployer", refused, "tok-c", "validate_strategy"), // left out, not fatal
		json.RawMessage(`{"type":"function","name":"other"}`),         // not MCP: skipped
	})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	var got []string
	for _, f := range set.Functions() {
		got = append(got, f.Name+"="+f.ServerLabel+"/"+f.Tool)
		if !json.Valid(f.Parameters) {
			t.Errorf("%s: parameters %q are not JSON", f.Name, f.Parameters)
		}
	}
	want := []string{ // in the servers' listing order, which the SDK sorts by name
		"run_backtest=strategy_engine/run_backtest",
		"strategy_engine__validate_strategy=strategy_engine/validate_strategy",
		"risk_lab__validate_strategy=risk_lab/validate_strategy",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("functions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tok-a"}, a.seenContexts()); diff != "" {
		t.Errorf("strategy_engine got x-mcp-context (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tok-b"}, b.seenContexts()); diff != "" {
		t.Errorf("risk_lab got x-mcp-context (-want +got):\n%s", diff)
	}
}

func TestCall(t *testing.T) {
	e := newEngine(t, "strategy_engine")
	h := newHost(t, Options{CallTimeout: 200 * time.Millisecond, MaxResultBytes: 100})
	set, err := h.Open(t.Context(), []json.RawMessage{toolObject("strategy_engine", e.url, "tok", "validate_strategy", "run_backtest", "slow")})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	tests := []struct {
		name, fn, args string
		want           upstream.ToolResult
	}{
		{"a tool error is a failed result", "validate_strategy", `{"name":"a"}`, upstream.ToolResult{Failed: true, Error: "market data timed out"}},
		{"the retry succeeds", "validate_strategy", `{"name":"a"}`, upstream.ToolResult{Output: `{"strategy_id":"s-1","args":{"name":"a"}}`}},
		{"a long result is cut", "run_backtest", `{}`, upstream.ToolResult{Output: strings.Repeat("x", 100-len(truncatedMark)) + truncatedMark}},
		{"a slow tool times out", "slow", `{}`, upstream.ToolResult{Failed: true, Error: "the tool did not answer within 200ms", Reason: upstream.ReasonTimeout}},
		{"an unknown function", "nope", `{}`, upstream.ToolResult{Failed: true, Error: `no MCP server offers a tool named "nope"`, Reason: upstream.ReasonUnknownTool}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, set.Call(t.Context(), tt.fn, tt.args)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// closedURL is the URL of a port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}
