package orchestration

import (
	"context"
	"errors"

	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/store"
)

// errTurnTimeout is the cause of a turn cut by the hard turn limit.
var errTurnTimeout = errors.New("the turn took longer than its time limit")

// turn is the state one running generation carries between its steps.
type turn struct {
	ctx      context.Context
	cancel   context.CancelCauseFunc
	begun    *session.Begun
	msg      *store.Message
	userText string
	em       *emitter
	// freeSlot gives the turn's concurrency slot back (once). The tail calls it before the
	// terminal event, so a client that sees the end and posts again finds the slot free.
	freeSlot func()

	plan     *plan
	history  []store.Message
	attempts int
	result   stream.Result       // the accepted (or last) attempt
	outcome  postprocess.Outcome // its post-processing
	problems []string            // why the last attempt was refused
	settled  *settlement         // what the accepted reply changed
	fallback bool                // the reply was replaced by a fallback text
}

// logCtx is the context for writing the turn's own events and rows: it survives the turn's
// cancellation, because a cancelled turn must still write its tail.
func (t *turn) logCtx() context.Context { return context.WithoutCancel(t.ctx) }
