package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/phaseflow/phaseflow/upstream"
)

// Toolset is the servers opened for one request ([upstream.Toolset]).
type Toolset struct {
	host    *Host
	servers []*server
	fns     []upstream.Function
	byName  map[string]binding
}

// binding is where a function name leads.
type binding struct {
	srv  *server
	tool string
}

// name gives every tool its function name: the tool's own name when no other server
// offers one by that name, else label__tool.
func (t *Toolset) name() {
	count := map[string]int{}
	for _, s := range t.servers {
		for _, tool := range s.tools {
			count[tool.Name]++
		}
	}
	t.byName = map[string]binding{}
	for _, s := range t.servers {
		for _, tool := range s.tools {
			name := functionName(tool.Name)
			if count[tool.Name] > 1 || name != tool.Name {
				name = functionName(s.label + "__" + tool.Name)
			}
			if _, dup := t.byName[name]; dup {
				continue
			}
			t.byName[name] = binding{srv: s, tool: tool.Name}
			params, _ := json.Marshal(tool.InputSchema) // it came from JSON
			t.fns = append(t.fns, upstream.Function{Name: name, ServerLabel: s.label, Tool: tool.Name, Description: tool.Description, Parameters: params})
		}
	}
}

// Functions returns the offered functions.
func (t *Toolset) Functions() []upstream.Function { return t.fns }

// Call runs one function within the call time-out. A tool result with isError, a protocol
// error and a time-out are all failed results, never Go errors.
func (t *Toolset) Call(ctx context.Context, function, arguments string) upstream.ToolResult {
	b, ok := t.byName[function]
	if !ok {
		return upstream.ToolResult{Failed: true, Error: fmt.Sprintf("no MCP server offers a tool named %q", function), Reason: upstream.ReasonUnknownTool}
	}
	cctx, cancel := context.WithTimeout(ctx, t.host.opts.CallTimeout)
	defer cancel()
	res, err := b.srv.session.CallTool(cctx, &mcp.CallToolParams{Name: b.tool, Arguments: json.RawMessage(arguments)})
	switch {
	case err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return upstream.ToolResult{Failed: true, Error: fmt.Sprintf("the tool did not answer within %s", t.host.opts.CallTimeout), Reason: upstream.ReasonTimeout}
	case err != nil:
		return upstream.ToolResult{Failed: true, Error: clip(err.Error(), maxErrorText)}
	case res.IsError:
		return upstream.ToolResult{Failed: true, Error: clip(resultText(res), maxErrorText)}
	}
	return upstream.ToolResult{Output: clip(resultText(res), t.host.opts.MaxResultBytes)}
}

// Close ends every session at once and waits for them.
func (t *Toolset) Close() error {
	errs := make([]error, len(t.servers))
	var wg sync.WaitGroup
	for i, s := range t.servers {
		wg.Go(func() { errs[i] = s.session.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// resultText joins a result's text content; other content is kept as its JSON, and a
// result with only structured content is that content's JSON.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
			continue
		}
		if b, err := json.Marshal(c); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

// truncatedMark ends a clipped text.
const truncatedMark = "…[truncated]"

// clip shortens s to at most n bytes without splitting a UTF-8 sequence, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len(truncatedMark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:max(n, 0)] + truncatedMark
}
