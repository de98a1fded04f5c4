package handlers

import (
	"errors"
	"slices"

	"github.com/phaseflow/phaseflow/phases"
)

// ErrUnknownStage is returned by a Prompt asked for a stage its phase does not have.
var ErrUnknownStage = errors.New("handlers: unknown stage")

// phaseHandler is what every handler in this package offers beyond [Handler]: its stages in
// order, and the tools each stage allows. The shared prompt code needs both, and the registry
// lists the stages for tests and tools that walk every prompt.
type phaseHandler interface {
	Handler
	stages() []string
	tools(stage string) []string
}

// Registry maps each working phase to its handler. It is built once and only read, so one
// registry can serve every session concurrently.
type Registry struct {
	byPhase map[phases.Phase]phaseHandler
}

// New returns the registry of the three phase handlers (strategy, stress_test, deployment),
// judging the strategy and stress test phases by c besides their conditions. Completed has
// no handler: nothing happens in it.
func New(c Criteria) *Registry {
	r := &Registry{byPhase: map[phases.Phase]phaseHandler{}}
	for _, h := range []phaseHandler{strategyHandler{criteria: c}, stressTestHandler{criteria: c}, deploymentHandler{}} {
		r.byPhase[h.Phase()] = h
	}
	return r
}

// For returns the handler of p, and false when p has none (completed, or not a phase).
func (r *Registry) For(p phases.Phase) (Handler, bool) {
	h, ok := r.byPhase[p]
	return h, ok
}

// Stages lists the stages of p in the order a session moves through them, or nil when p has
// no handler. Golden tests and prompt reviews use it to render every stage.
func (r *Registry) Stages(p phases.Phase) []string {
	h, ok := r.byPhase[p]
	if !ok {
		return nil
	}
	return slices.Clone(h.stages())
}

// confirmer is a handler that owns the strategy confirm route's step.
type confirmer interface {
	Confirm(block Artifacts, strategyID string, advance bool) Report
}

// ConfirmPhase names the phase that owns the strategy confirm route's step (strategy):
// whatever phase the session is in, the confirm route updates this phase's block, so the
// session's artifacts say what the strategy row says. ok is false when no phase has one.
func (r *Registry) ConfirmPhase() (phases.Phase, bool) {
	for _, p := range phases.All() {
		if _, ok := r.byPhase[p].(confirmer); ok {
			return p, true
		}
	}
	return "", false
}

// Confirm applies the strategy confirm route to the block of phase p (the one
// [Registry.ConfirmPhase] names): the handler returns the new block and its verdict. ok is
// false when p has no confirm step.
func (r *Registry) Confirm(p phases.Phase, block Artifacts, strategyID string, advance bool) (Report, bool) {
	c, ok := r.byPhase[p].(confirmer)
	if !ok {
		return Report{}, false
	}
	return c.Confirm(block, strategyID, advance), true
}
