package handlers

import (
	"maps"

	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// str returns the string field key of a, or "" when it is unset or not a string.
func str(a Artifacts, key string) string {
	s, _ := a[key].(string)
	return s
}

// boolean returns the bool field key of a, or false when it is unset or not a bool.
func boolean(a Artifacts, key string) bool {
	b, _ := a[key].(bool)
	return b
}

// evidence copies the named fields of a (nil when unset) and, when any tool succeeded this
// turn, their names under "tool_calls": what the transition row needs to explain a verdict.
func evidence(a Artifacts, calls []store.ToolCall, keys ...string) map[string]any {
	ev := make(map[string]any, len(keys)+1)
	for _, k := range keys {
		ev[k] = a[k]
	}
	var ok []string
	for _, c := range calls {
		if c.Status == store.ToolSuccess {
			ok = append(ok, c.Name)
		}
	}
	if len(ok) > 0 {
		ev["tool_calls"] = ok
	}
	return ev
}

// enter is the Enter of every handler: the phase's initial block, keeping the ids found so
// far and the strategy draft, so a strategy sent back for revision must be confirmed again
// and a second stress test decides afresh, without losing what the earlier passes found.
func enter(h Handler, previous Artifacts) Artifacts {
	fresh := h.InitialArtifacts()
	for k, v := range previous {
		if phases.IsIDKey(k) || k == phases.KeyStrategyDraft {
			fresh[k] = v
		}
	}
	return fresh
}

// clone copies a block one level deep (values are JSON values the handlers replace, never
// mutate).
func clone(a Artifacts) Artifacts { return maps.Clone(a) }
