package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is one open MCP session and the tools it offers.
type server struct {
	label   string
	session *mcp.ClientSession
	tools   []*mcp.Tool
}

// open connects to one server and lists its allowed tools, within the connect time-out.
// The session is closed again when listing fails.
func (h *Host) open(ctx context.Context, sp serverSpec) (*server, error) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.ConnectTimeout)
	defer cancel()
	transport := &mcp.StreamableClientTransport{
		Endpoint:             sp.ServerURL,
		HTTPClient:           &http.Client{Transport: headerTransport{base: h.tr, headers: sp.Headers}},
		MaxRetries:           -1,   // a turn does not wait for reconnects
		DisableStandaloneSSE: true, // tools only: no server-initiated messages to wait for
	}
	cs, err := h.client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", sp.ServerLabel, err)
	}
	s := &server{label: sp.ServerLabel, session: cs}
	if err := s.list(ctx, sp.AllowedTools); err != nil {
		_ = cs.Close()
		return nil, err
	}
	return s, nil
}

// list keeps the server's allowed tools, at most maxTools.
func (s *server) list(ctx context.Context, allowedRaw json.RawMessage) error {
	allowed, restricted := allowedNames(allowedRaw)
	for tool, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the tools of %s: %w", s.label, err)
		}
		if restricted && !allowed[tool.Name] {
			continue
		}
		s.tools = append(s.tools, tool)
		if len(s.tools) == maxTools {
			break
		}
	}
	if len(s.tools) == 0 {
		return fmt.Errorf("%s: %w", s.label, errNoTools)
	}
	return nil
}

// badNameChars are the characters a function name may not hold (OpenAI's rule:
// ^[a-zA-Z0-9_-]{1,64}$).
var badNameChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// functionName makes name a valid function name.
func functionName(name string) string {
	name = badNameChars.ReplaceAllString(name, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}
