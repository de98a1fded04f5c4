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

// New returns the registry of the three phase handlers (strategy, stress_test, deployment).
// Completed has no handler: nothing happens in it.
func New() *Registry {
	r := &Registry{byPhase: map[phases.Phase]phaseHandler{}}
	for _, h := range []phaseHandler{strategyHandler{}, stressTestHandler{}, deploymentHandler{}} {
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
