package scripted

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSessionTimeout closes MCP sessions a client left open, so a long-running mock does
// not keep them forever.
const mcpSessionTimeout = 5 * time.Minute

// maxHints bounds the scenario hints kept for the MCP servers.
const maxHints = 256

// mountMCP serves each scripted MCP server at /mcp/LABEL (and /v1/mcp/LABEL) over
// streamable HTTP, built with the official SDK: strategy_engine, risk_lab and deployer,
// with the tools of [toolCatalog]. They answer as the scenarios say, so a caller that runs
// the tools itself (Phaseflow on the Chat Completions wire) records what the Responses
// wire records.
func (s *Server) mountMCP() {
	for label, defs := range toolCatalog() {
		srv := mcp.NewServer(&mcp.Implementation{Name: label, Version: "scripted"}, nil)
		for _, d := range defs {
			srv.AddTool(&mcp.Tool{Name: d.name, Description: d.description, InputSchema: json.RawMessage(d.schema)}, s.toolHandler(d.name))
		}
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
			SessionTimeout: mcpSessionTimeout, Logger: s.log,
		})
		s.mux.Handle("/mcp/"+label, h)
		s.mux.Handle("/v1/mcp/"+label, h)
	}
}

// toolHandler answers calls of one tool from the scenarios.
func (s *Server) toolHandler(name string) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := canonicalJSON(req.Params.Arguments)
		caller := ""
		if req.Extra != nil && req.Extra.Header != nil {
			caller = req.Extra.Header.Get("X-Mcp-Context")
		}
		out, failure := s.answer(name, args, caller)
		if failure != "" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: failure}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
	}
}

// answer is the scripted result of tool name called with args (canonical JSON): the output
// of the matching call of the scenario the chat handler last asked for these arguments
// with (else of the first scenario with such a call), with the placeholders filled from
// the arguments and fresh ids. A scenario that fails the call once and retries it (the
// strategy draft's validate_strategy) fails every other call from one caller (its
// x-mcp-context) with these arguments, the first included.
func (s *Server) answer(name, args, caller string) (output, failure string) {
	calls := s.candidates(name, args)
	var argMap map[string]any
	_ = json.Unmarshal([]byte(args), &argMap) // the SDK checked it is an object
	vars := varsWith(argMap, nil)
	for _, c := range calls {
		if c.failure != "" && s.mcpOnce.bad(name+"\x00"+args, caller) {
			return "", vars.Replace(c.failure)
		}
	}
	for _, c := range calls {
		if c.failure == "" {
			return vars.Replace(c.output), ""
		}
	}
	return `{"status":"ok"}`, ""
}

// candidates lists the scenario calls that may answer name with args: those of the hinted
// scenario, else those of every scenario (stage defaults first) whose arguments template
// matches args, else any call of the tool.
func (s *Server) candidates(name, args string) []toolCall {
	if sc, ok := lookupScenario(s.hints.get(name, args)); ok {
		if calls := callsNamed(sc.calls, name, ""); len(calls) > 0 {
			return calls
		}
	}
	var matching, any []toolCall
	for _, scName := range scenarioOrder() {
		sc, _ := lookupScenario(scName)
		matching = append(matching, callsNamed(sc.calls, name, args)...)
		any = append(any, callsNamed(sc.calls, name, "")...)
	}
	if len(matching) > 0 {
		return matching
	}
	return any
}

// callsNamed returns the calls of tool name whose arguments template matches args (all
// of them when args is "").
func callsNamed(calls []toolCall, name, args string) []toolCall {
	var out []toolCall
	for _, c := range calls {
		if c.name != name {
			continue
		}
		if args != "" {
			if _, re := templateRE(canonicalJSON(json.RawMessage(c.arguments))); !re.MatchString(args) {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// scenarioOrder names every scenario: the stage defaults in order, then the others sorted.
func scenarioOrder() []string {
	var names []string
	for _, d := range stageDefaults() {
		names = append(names, d.scenario)
	}
	var rest []string
	for name := range scenarios() {
		if !slices.Contains(names, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

// canonicalJSON re-encodes a JSON value with sorted keys, so arguments compare equal
// whatever their key order and spacing; text that is not JSON is kept.
func canonicalJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// hintTable remembers which scenario asked for a tool call with given arguments, so the
// MCP server can answer as that scenario says (deploy_monitor_blocked and
// deploy_monitor_completed call check_risk_guard alike). It is bounded; the oldest hint
// goes first.
type hintTable struct {
	mu    sync.Mutex
	order []string
	byKey map[string]string
}

// set records that scenario asked for tool name with arguments.
func (h *hintTable) set(name, arguments, scenario string) {
	key := name + "\x00" + canonicalJSON(json.RawMessage(arguments))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byKey == nil {
		h.byKey = map[string]string{}
	}
	if _, ok := h.byKey[key]; !ok {
		h.order = append(h.order, key)
	}
	h.byKey[key] = scenario
	if len(h.order) > maxHints {
		delete(h.byKey, h.order[0])
		h.order = h.order[1:]
	}
}

// get returns the scenario that last asked for name with args (canonical), "" for none.
func (h *hintTable) get(name, args string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byKey[name+"\x00"+args]
}
