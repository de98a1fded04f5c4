package orchestration

// UserTurns bounds the generations one user runs at once (package userlimit). The
// orchestrator owns a turn's lifetime, so it takes a user's slot with the turn's global slot
// and gives it back when the turn frees its slot (before the terminal event) or never
// starts. Kept apart from the rest of the orchestrator so it can be merged or dropped alone.
type UserTurns interface {
	// Acquire takes one of userID's slots, or returns an error (answered 429) and takes
	// nothing.
	Acquire(userID string) error
	// Release gives back one of userID's slots.
	Release(userID string)
}

// noUserTurns is the UserTurns of an orchestrator built without one: no per-user bound.
type noUserTurns struct{}

func (noUserTurns) Acquire(string) error { return nil }
func (noUserTurns) Release(string)       {}
