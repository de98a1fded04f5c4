package scripted

import (
	"context"
	"encoding/json"
)

// toolCall is one scripted MCP call: the server label and tool name, the arguments as a
// JSON text, and either the tool's output text or, for a call that fails, the error text
// the tool returns (an MCP result with isError set). arguments, output and failure may
// hold the placeholders of [newVars].
type toolCall struct {
	server, name string
	arguments    string
	output       string
	failure      string
}

// toolDef is one tool of an MCP server as mcp_list_tools reports it; schema is the JSON
// Schema of its arguments.
type toolDef struct {
	name, description, schema string
	readOnly                  bool
}

// The MCP server labels the scenarios call, as the server configures them in a request's
// tools.
const (
	serverStrategyEngine = "strategy_engine"
	serverRiskLab        = "risk_lab"
	serverDeployer       = "deployer"
)

// toolCatalog returns the tools each scripted MCP server lists, keyed by server label.
func toolCatalog() map[string][]toolDef {
	return map[string][]toolDef{
		serverStrategyEngine: {
			{name: "validate_strategy", readOnly: true,
				description: "Check a strategy spec and register it; returns its strategy_id.",
				schema:      `{"type":"object","properties":{"name":{"type":"string"},"spec":{"type":"object"}},"required":["name","spec"]}`},
			{name: "run_backtest", readOnly: true,
				description: "Backtest the session's strategy over a date range; returns the equity series and metrics.",
				schema:      `{"type":"object","properties":{"symbol":{"type":"string"},"from":{"type":"string","format":"date"},"to":{"type":"string","format":"date"},"initial_capital":{"type":"number"}},"required":["from","to"]}`},
		},
		serverRiskLab: {
			{name: "run_stress_scenarios", readOnly: true,
				description: "Replay a scenario set against the session's strategy; returns a stress report.",
				schema:      `{"type":"object","properties":{"scenario_set_id":{"type":"string"}},"required":["scenario_set_id"]}`},
		},
		serverDeployer: {
			{name: "check_risk_guard",
				description: "Arm or inspect the risk guard of a deployment target or a running deployment.",
				schema:      `{"type":"object","properties":{"target":{"type":"string","enum":["paper","live"]},"deployment_id":{"type":"string"},"max_position":{"type":"number"},"max_daily_loss":{"type":"number"}}}`},
			{name: "deploy_strategy",
				description: "Roll the session's strategy out to a target; returns the deployment_id.",
				schema:      `{"type":"object","properties":{"target":{"type":"string","enum":["paper","live"]}},"required":["target"]}`},
		},
	}
}

// Wire shapes of MCP items and events (docs/upstreams.md).
type (
	mcpListItem struct {
		ID          string     `json:"id"`
		Type        string     `json:"type"`
		ServerLabel string     `json:"server_label"`
		Tools       []wireTool `json:"tools"`
		Error       *string    `json:"error"`
	}
	wireTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Annotations struct {
			ReadOnly bool `json:"read_only"`
		} `json:"annotations"`
	}
	mcpCallItem struct {
		ID                string     `json:"id"`
		Type              string     `json:"type"`
		Status            string     `json:"status,omitempty"`
		ServerLabel       string     `json:"server_label"`
		Name              string     `json:"name"`
		Arguments         string     `json:"arguments"`
		Output            *string    `json:"output"`
		Error             *toolError `json:"error"`
		ApprovalRequestID *string    `json:"approval_request_id"`
	}
	// toolError is the mcp_tool_execution_error shape: the MCP content of an isError result.
	toolError struct {
		Type    string     `json:"type"`
		Content []toolText `json:"content"`
	}
	toolText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	progressEvent struct {
		OutputIndex int    `json:"output_index"`
		ItemID      string `json:"item_id"`
	}
	argsDeltaEvent struct {
		OutputIndex int    `json:"output_index"`
		ItemID      string `json:"item_id"`
		Delta       string `json:"delta"`
		Obfuscation string `json:"obfuscation"`
	}
	argsDoneEvent struct {
		OutputIndex int    `json:"output_index"`
		ItemID      string `json:"item_id"`
		Arguments   string `json:"arguments"`
	}
)

// runTools streams the MCP part of a response: one mcp_list_tools item per server the
// calls use, then each call, from output_index 0 on. It returns the final items, in order,
// for response.completed.
func (p *plan) runTools(ctx context.Context, ew *eventWriter) ([]any, error) {
	var items []any
	for _, label := range serversOf(p.calls) {
		item, err := listTools(ew, len(items), label)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	for _, c := range p.calls {
		item, err := p.call(ctx, ew, len(items), c)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	return items, nil
}

// serversOf returns the distinct server labels of calls, in order of first use.
func serversOf(calls []toolCall) []string {
	var labels []string
	seen := make(map[string]bool)
	for _, c := range calls {
		if !seen[c.server] {
			seen[c.server] = true
			labels = append(labels, c.server)
		}
	}
	return labels
}

// listTools streams the mcp_list_tools item of one server at index (transcript B).
func listTools(ew *eventWriter, index int, label string) (mcpListItem, error) {
	item := mcpListItem{ID: "mcpl_" + newID(), Type: "mcp_list_tools", ServerLabel: label, Tools: []wireTool{}}
	progress := progressEvent{OutputIndex: index, ItemID: item.ID}
	if err := ew.send("response.output_item.added", itemEvent{OutputIndex: index, Item: item}); err != nil {
		return item, err
	}
	if err := ew.send("response.mcp_list_tools.in_progress", progress); err != nil {
		return item, err
	}
	if err := ew.send("response.mcp_list_tools.completed", progress); err != nil {
		return item, err
	}
	for _, d := range toolCatalog()[label] {
		t := wireTool{Name: d.name, Description: d.description, InputSchema: json.RawMessage(d.schema)}
		t.Annotations.ReadOnly = d.readOnly
		item.Tools = append(item.Tools, t)
	}
	return item, ew.send("response.output_item.done", itemEvent{OutputIndex: index, Item: item})
}

// call streams one mcp_call item at index: the skeleton, its arguments, a pause standing
// for the tool's run time, then mcp_call.completed or .failed before the final item
// (transcripts B and C).
func (p *plan) call(ctx context.Context, ew *eventWriter, index int, c toolCall) (mcpCallItem, error) {
	item := mcpCallItem{ID: "mcp_" + newID(), Type: "mcp_call", ServerLabel: c.server, Name: c.name}
	progress := progressEvent{OutputIndex: index, ItemID: item.ID}
	if err := ew.send("response.output_item.added", itemEvent{OutputIndex: index, Item: item}); err != nil {
		return item, err
	}
	if err := ew.send("response.mcp_call.in_progress", progress); err != nil {
		return item, err
	}
	for _, piece := range chunks(c.arguments, p.chunkSize) {
		if err := ew.send("response.mcp_call_arguments.delta", argsDeltaEvent{OutputIndex: index, ItemID: item.ID, Delta: piece}); err != nil {
			return item, err
		}
	}
	if err := ew.send("response.mcp_call_arguments.done", argsDoneEvent{OutputIndex: index, ItemID: item.ID, Arguments: c.arguments}); err != nil {
		return item, err
	}
	if err := sleep(ctx, p.pace); err != nil {
		return item, err
	}
	item.Arguments = c.arguments
	ending := "response.mcp_call.completed"
	if c.failure != "" {
		ending = "response.mcp_call.failed"
		item.Status = "failed"
		item.Error = &toolError{Type: "mcp_tool_execution_error", Content: []toolText{{Type: "text", Text: c.failure}}}
	} else {
		item.Status = "completed"
		item.Output = &c.output
	}
	if err := ew.send(ending, progress); err != nil {
		return item, err
	}
	return item, ew.send("response.output_item.done", itemEvent{OutputIndex: index, Item: item})
}
