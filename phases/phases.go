// Package phases names the phases of a conversation and the moves allowed between them. It is
// the single source of truth for the graph: the orchestrator, the phase handlers and the
// manual phase route all ask it before moving a session.
package phases

import (
	"errors"
	"fmt"
)

// Phase is the name of a conversation phase as stored on the session and sent to clients.
type Phase string

// The phases, in their normal order.
const (
	Strategy   Phase = "strategy"
	StressTest Phase = "stress_test"
	Deployment Phase = "deployment"
	Completed  Phase = "completed"
)

// Initial is the phase of a new session.
const Initial = Strategy

// All lists the phases in their normal order.
func All() []Phase { return []Phase{Strategy, StressTest, Deployment, Completed} }

// ErrForbiddenMove is returned for a move the graph does not allow (HTTP 422 on the manual
// route; ignored with a log line when a handler asks for it).
var ErrForbiddenMove = errors.New("phases: move not allowed")

// ErrUnknown is returned for a name that is not a phase.
var ErrUnknown = errors.New("phases: unknown phase")

// graph lists the allowed moves: forward through the phases, and back to strategy from stress
// test (the test failed or the user wants changes) and from deployment (blocked).
var graph = map[Phase][]Phase{
	Strategy:   {StressTest},
	StressTest: {Deployment, Strategy},
	Deployment: {Completed, Strategy},
}

// Moves lists every move the graph allows, from → to, in a fixed order.
func Moves() [][2]Phase {
	var out [][2]Phase
	for _, from := range []Phase{Strategy, StressTest, Deployment} {
		for _, to := range graph[from] {
			out = append(out, [2]Phase{from, to})
		}
	}
	return out
}

// Parse checks that s names a phase.
func Parse(s string) (Phase, error) {
	switch p := Phase(s); p {
	case Strategy, StressTest, Deployment, Completed:
		return p, nil
	}
	return "", fmt.Errorf("%w: %q", ErrUnknown, s)
}

// CheckMove returns nil when the graph allows from → to, and an error wrapping
// [ErrForbiddenMove] otherwise.
func CheckMove(from, to Phase) error {
	for _, next := range graph[from] {
		if next == to {
			return nil
		}
	}
	return fmt.Errorf("%w: %s → %s", ErrForbiddenMove, from, to)
}
