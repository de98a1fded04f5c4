package store

import (
	"context"
	"database/sql"
	"errors"
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
//
// The row is found by its key alone and its user compared here, for the reason
// buildLockQuery gives: with the user in the condition, a plan made without statistics
// read every session of the user (TestKeyedReadsUseTheKey).
func (s *Store) owned(ctx context.Context, table, id, userID string) error {
	var owner string
	err := s.getFixed(ctx, &owner, ownedQuery(table), id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("store: check owner of %s %s: %w", table, id, err)
	case owner != userID:
		return ErrNotFound
	}
	return nil
}

// ownedQuery is owned's statement for table.
func ownedQuery(table string) string { return `SELECT user_id FROM ` + table + ` WHERE id = ?` }
