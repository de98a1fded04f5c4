package orchestration

import (
	"context"

	"github.com/phaseflow/phaseflow/orchestration/lease"
	"github.com/phaseflow/phaseflow/orchestration/manual"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
)

// Store is what the orchestrator is built on: each step's own small interface (session,
// planning, stored prompts, leases), and what the root writes itself.
type Store interface {
	session.Store
	prompt.Store
	prompt.PromptStore
	lease.Store
	Settler
	manual.Store
	// ListEvents reads a message's log (ending an orphan replays its text).
	ListEvents(ctx context.Context, messageID string, afterSeq int64, limit int) ([]store.Event, error)
	// RunningElsewhere counts a user's generations owned by other replicas.
	RunningElsewhere(ctx context.Context, userID, owner string) (int, error)
}

// Settler writes a turn's settlement in one transaction.
type Settler interface {
	SettleTurn(ctx context.Context, st *store.Settlement) error
}
