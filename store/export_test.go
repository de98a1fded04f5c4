package store

import "context"

// Hooks for the external test package (store_test), which cannot reach unexported names.

// InsertMessage writes m without the checks of CreateTurn, so tests can hit the unique
// indexes directly.
func (s *Store) InsertMessage(ctx context.Context, m *Message) error {
	return s.insertMessage(ctx, s.db, m)
}

// UniqueViolation exposes uniqueViolation.
var UniqueViolation = uniqueViolation

// Index names the store maps to typed errors.
const (
	IdxOneRunning      = idxOneRunning
	IdxClientRequestID = idxClientRequestID
)
