package prompt

import (
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/stream"
)

// RuntimePolicy is what a message request may set of its turn's runtime policy (docs/turn.md
// §3.2 step 4): each field nil when the request leaves it to the server (package api
// parses it). The plan merges it over the phase's defaults and the server's settings
// (Plan.Policy, which the turn records on its message as metadata.runtime_policy).
type RuntimePolicy struct {
	// ReplyPolicy replaces the server's reply policy for this turn: retry, report or off.
	ReplyPolicy *stream.Policy
	// SerpOptional replaces the server's setting: whether the reply may leave out its
	// serp queries block.
	SerpOptional *bool
	// MaxOutputTokens caps the reply's tokens; it can lower the phase's (or the server's)
	// cap, never raise it.
	MaxOutputTokens *int
}

// requestedCap is the request's output cap, 0 for none.
func (p *RuntimePolicy) requestedCap() int {
	if p == nil || p.MaxOutputTokens == nil {
		return 0
	}
	return *p.MaxOutputTokens
}

// policy is the turn's runtime policy: the request's values over the server's settings
// and, for the output cap and tools, the plan's (the phase's defaults).
func (pl *Plan) policy(cfg Config, p *RuntimePolicy) events.RuntimePolicy {
	r := events.RuntimePolicy{ReplyPolicy: string(cfg.ReplyPolicy), SerpOptional: cfg.SerpQueriesOptional,
		MaxOutputTokens: pl.MaxOutputTokens, ToolChoice: pl.ToolChoice, AllowedTools: pl.AllowedTools}
	if p == nil {
		return r
	}
	if p.ReplyPolicy != nil {
		r.ReplyPolicy, r.Requested = string(*p.ReplyPolicy), append(r.Requested, "reply_policy")
	}
	if p.SerpOptional != nil {
		r.SerpOptional, r.Requested = *p.SerpOptional, append(r.Requested, "serp_optional")
	}
	if p.MaxOutputTokens != nil {
		r.Requested = append(r.Requested, "max_output_tokens")
	}
	return r
}
