package orchestration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/stream"
)

// ErrBadPolicy wraps every reason a message request's runtime_policy is refused (400).
var ErrBadPolicy = errors.New("runtime_policy")

// maxRequestOutputTokens bounds max_output_tokens in a request; the effective cap is the
// smaller of it and the phase's (or the server's) anyway.
const maxRequestOutputTokens = 1_000_000

// RuntimePolicy is what a message request may set of its turn's runtime policy (seed 002
// §3.2 step 4): each field nil when the request leaves it to the server. It is merged over
// the phase's defaults and the server's settings ([Orchestrator] records the result on
// the message as metadata.runtime_policy).
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

// policyKeys are the keys a runtime_policy may hold, in the order errors list them.
var policyKeys = []string{"reply_policy", "serp_optional", "max_output_tokens"}

// ParseRuntimePolicy reads a request's runtime_policy (absent or null: nil). Only the known
// keys are allowed: an unknown one, or a known one with a bad value, is an error wrapping
// ErrBadPolicy that names it.
func ParseRuntimePolicy(raw json.RawMessage) (*RuntimePolicy, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("%w: must be an object", ErrBadPolicy)
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	p := &RuntimePolicy{}
	for _, k := range names {
		if err := p.set(k, fields[k]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// set reads one key of a runtime_policy.
func (p *RuntimePolicy) set(key string, v json.RawMessage) error {
	bad := func(want string) error { return fmt.Errorf("%w: %q must be %s", ErrBadPolicy, key, want) }
	switch key {
	case "reply_policy":
		var s stream.Policy
		if json.Unmarshal(v, &s) != nil || !slices.Contains([]stream.Policy{stream.PolicyRetry, stream.PolicyReport, stream.PolicyOff}, s) {
			return bad(`"retry", "report" or "off"`)
		}
		p.ReplyPolicy = &s
	case "serp_optional":
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return bad("true or false")
		}
		p.SerpOptional = &b
	case "max_output_tokens":
		var n int
		if json.Unmarshal(v, &n) != nil || n < 1 || n > maxRequestOutputTokens {
			return bad(fmt.Sprintf("a whole number from 1 to %d", maxRequestOutputTokens))
		}
		p.MaxOutputTokens = &n
	default:
		return fmt.Errorf("%w: unknown key %q (known: %s)", ErrBadPolicy, key, strings.Join(policyKeys, ", "))
	}
	return nil
}

// requestedCap is the request's output cap, 0 for none.
func (p *RuntimePolicy) requestedCap() int {
	if p == nil || p.MaxOutputTokens == nil {
		return 0
	}
	return *p.MaxOutputTokens
}

// merged is the turn's runtime policy: the request's values over the server's settings
// and, for the output cap and tools, the plan's (the phase's defaults).
func (o *Orchestrator) merged(p *RuntimePolicy, plan *prompt.Plan) events.RuntimePolicy {
	r := events.RuntimePolicy{ReplyPolicy: string(o.cfg.ReplyPolicy), SerpOptional: o.cfg.SerpQueriesOptional}
	if plan != nil {
		r.MaxOutputTokens, r.ToolChoice, r.AllowedTools = plan.MaxOutputTokens, plan.ToolChoice, plan.AllowedTools
	}
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
