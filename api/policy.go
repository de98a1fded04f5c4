package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/stream"
)

// errBadPolicy wraps every reason a message request's runtime_policy is refused (400).
var errBadPolicy = errors.New("runtime_policy")

// errPolicyNotAllowed wraps a runtime_policy that would loosen the server's checks for a
// user who is not an admin (403 policy_not_allowed).
var errPolicyNotAllowed = errors.New("runtime_policy not allowed")

// maxRequestOutputTokens bounds max_output_tokens in a request; the effective cap is the
// smaller of it and the phase's (or the server's) anyway.
const maxRequestOutputTokens = 1_000_000

// policyKeys are the keys a runtime_policy may hold, in the order errors list them.
func policyKeys() []string { return []string{"reply_policy", "serp_optional", "max_output_tokens"} }

// parseRuntimePolicy reads a request's runtime_policy (absent or null: nil). Only the known
// keys are allowed: an unknown one, or a known one with a bad value, is an error wrapping
// errBadPolicy that names it.
func parseRuntimePolicy(raw json.RawMessage) (*prompt.RuntimePolicy, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("%w: must be an object", errBadPolicy)
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	p := &prompt.RuntimePolicy{}
	for _, k := range names {
		if err := setPolicy(p, k, fields[k]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// setPolicy reads one key of a runtime_policy into p.
func setPolicy(p *prompt.RuntimePolicy, key string, v json.RawMessage) error {
	bad := func(want string) error { return fmt.Errorf("%w: %q must be %s", errBadPolicy, key, want) }
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
		return fmt.Errorf("%w: unknown key %q (known: %s)", errBadPolicy, key, strings.Join(policyKeys(), ", "))
	}
	return nil
}

// strictness orders the reply policies: a request may move its turn up this order, never
// down, unless an admin sends it.
func strictness(p stream.Policy) int {
	switch p {
	case stream.PolicyRetry:
		return 2
	case stream.PolicyReport:
		return 1
	default:
		return 0
	}
}

// checkLoosening refuses a policy that would check a reply less than the server does:
// a weaker reply policy, or leaving out the serp queries the server requires. The checks
// are what keep an invalid reply from moving a phase, so only the server's settings or an
// admin may relax them; a user may only make them stricter.
func checkLoosening(p *prompt.RuntimePolicy, server stream.Policy, serpOptional, admin bool) error {
	if p == nil || admin {
		return nil
	}
	if p.ReplyPolicy != nil && strictness(*p.ReplyPolicy) < strictness(server) {
		return fmt.Errorf("%w: reply_policy %q is weaker than the server's %q; only an admin may relax it",
			errPolicyNotAllowed, *p.ReplyPolicy, server)
	}
	if p.SerpOptional != nil && *p.SerpOptional && !serpOptional {
		return fmt.Errorf("%w: serp_optional true would skip the serp queries the server requires; only an admin may relax it",
			errPolicyNotAllowed)
	}
	return nil
}
