// Package mcptools runs MCP tools on behalf of a model that cannot reach MCP servers
// itself: on the Chat Completions wire the upstream only sees functions, so Phaseflow
// connects to each server named in a request's tools, lists the tools the stage allows,
// and runs the calls the model makes ([upstream.ToolHost]).
//
// It uses the official SDK (github.com/modelcontextprotocol/go-sdk) over streamable HTTP,
// sending each server the headers its tool object carries (the x-mcp-context token).
// Everything is bounded: connecting and listing, each call (a time-out becomes a failed
// call the model sees), the size of a result, the number of tools. Sessions live for one
// request and are closed by [Toolset.Close]; nothing outlives it.
package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/phaseflow/phaseflow/upstream"
)

// The defaults of [Options].
const (
	DefaultCallTimeout    = 45 * time.Second // below the stream handler's default 60s idle limit
	DefaultConnectTimeout = 10 * time.Second
	DefaultMaxResultBytes = 64 << 10
)

// maxTools bounds the tools listed from one server; a server listing more is cut there.
const maxTools = 128

// maxErrorText bounds the text of a failed call.
const maxErrorText = 2000

// Options tune a [Host]. Zero values pick the defaults.
type Options struct {
	// CallTimeout bounds one tool call; a call that takes longer fails with a time-out
	// the model is told about.
	CallTimeout time.Duration
	// ConnectTimeout bounds connecting to one server and listing its tools.
	ConnectTimeout time.Duration
	// MaxResultBytes caps a tool's result text; a longer one is cut and marked.
	MaxResultBytes int
	// Logger receives a line per server that cannot be opened; nil discards.
	Logger *slog.Logger
}

// Host opens the MCP servers of requests. It is safe for concurrent use; each [Host.Open]
// gets sessions of its own. Create it with [New].
type Host struct {
	opts   Options
	client *mcp.Client
	tr     *http.Transport
	log    *slog.Logger
}

// New returns a host with opts applied.
func New(opts Options) *Host {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true
	return &Host{
		opts:   opts,
		client: mcp.NewClient(&mcp.Implementation{Name: "phaseflow", Version: "1"}, nil),
		tr:     tr, log: log,
	}
}

// CloseIdleConnections closes the kept-alive connections to MCP servers; call it when the
// host is no longer needed.
func (h *Host) CloseIdleConnections() { h.tr.CloseIdleConnections() }

// serverSpec is the part of a Responses-style MCP tool object the host reads.
type serverSpec struct {
	Type         string            `json:"type"`
	ServerLabel  string            `json:"server_label"`
	ServerURL    string            `json:"server_url"`
	AllowedTools json.RawMessage   `json:"allowed_tools"`
	Headers      map[string]string `json:"headers"`
}

// Open connects to every MCP server of tools at once and lists their allowed tools. A
// server that cannot be reached in time is logged and left out, so one broken server
// does not take the others' tools away; Open fails only when a tool object is not JSON.
func (h *Host) Open(ctx context.Context, tools []json.RawMessage) (upstream.Toolset, error) {
	specs, err := parseSpecs(tools)
	if err != nil {
		return nil, err
	}
	opened := make([]*server, len(specs))
	var wg sync.WaitGroup
	for i, sp := range specs {
		wg.Go(func() {
			s, err := h.open(ctx, sp)
			if err != nil {
				h.log.Warn("MCP server left out of this request", "server_label", sp.ServerLabel, "err", err)
				return
			}
			opened[i] = s
		})
	}
	wg.Wait()
	set := &Toolset{host: h}
	for _, s := range opened {
		if s != nil {
			set.servers = append(set.servers, s)
		}
	}
	set.name()
	return set, nil
}

// parseSpecs reads the MCP tool objects of tools; other tool types are skipped.
func parseSpecs(tools []json.RawMessage) ([]serverSpec, error) {
	var specs []serverSpec
	for _, raw := range tools {
		var sp serverSpec
		if err := json.Unmarshal(raw, &sp); err != nil {
			return nil, fmt.Errorf("mcptools: tool object: %w", err)
		}
		if sp.Type == "mcp" && sp.ServerURL != "" {
			specs = append(specs, sp)
		}
	}
	return specs, nil
}

// allowedNames reads allowed_tools: a list of names, or {"tool_names": […]}; absent means
// every tool.
func allowedNames(raw json.RawMessage) (map[string]bool, bool) {
	var names []string
	if json.Unmarshal(raw, &names) != nil {
		var obj struct {
			ToolNames []string `json:"tool_names"`
		}
		if json.Unmarshal(raw, &obj) != nil || obj.ToolNames == nil {
			return nil, false
		}
		names = obj.ToolNames
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set, true
}

// headerTransport adds a server's headers to every request of its session.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

// RoundTrip sets the headers on a copy of req.
func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

// errNoTools is logged for a server that offers none of the allowed tools.
var errNoTools = errors.New("the server offers none of the allowed tools")
