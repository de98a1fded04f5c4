package store

import (
	"context"
	"fmt"
)

// Tables whose rows carry a user_id, the owner checks of list methods look in them.
const (
	tableSessions = "sessions"
	tableMessages = "messages"
)

// owned returns nil when the row id of table belongs to userID and ErrNotFound otherwise
// (missing and foreign rows look the same, so ids do not leak). List methods call it
// first so that an empty list means "yours, but empty" and never "not yours". table must
// be one of the constants above: it is spliced into the SQL text.
func (s *Store) owned(ctx context.Context, table, id, userID string) error {
	var n int
	err := s.getFixed(ctx, &n, `SELECT count(*) FROM `+table+` WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return fmt.Errorf("store: check owner of %s %s: %w", table, id, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}
