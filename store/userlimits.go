package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// TakeMessage takes one message from userID's allowance, a generic cell rate: a message
// every interval on average, tolerance ahead of that at most (interval × (burst − 1)). One
// statement, so replicas taking at once never let more through than one would. When the
// allowance is used up it takes nothing and says how long until a message is allowed.
func (s *Store) TakeMessage(ctx context.Context, userID string, now time.Time, interval, tolerance time.Duration) (bool, time.Duration, error) {
	at, step, tol := now.UnixMicro(), interval.Microseconds(), tolerance.Microseconds()
	greatest := "GREATEST"
	if s.driver == DriverSQLite {
		greatest = "MAX" // SQLite's scalar max of its arguments
	}
	var tat int64
	err := s.db.GetContext(ctx, &tat, s.db.Rebind(`INSERT INTO user_message_rate (user_id, tat) VALUES (?, CAST(? AS BIGINT))
		ON CONFLICT (user_id) DO UPDATE SET tat = `+greatest+`(user_message_rate.tat, CAST(? AS BIGINT)) + CAST(? AS BIGINT)
		WHERE `+greatest+`(user_message_rate.tat, CAST(? AS BIGINT)) - CAST(? AS BIGINT) <= CAST(? AS BIGINT)
		RETURNING tat`), userID, at+step, at, step, at, at, tol)
	switch {
	case err == nil:
		return true, 0, nil
	case !errors.Is(err, sql.ErrNoRows):
		return false, 0, fmt.Errorf("store: take a message: %w", err)
	}
	if err := s.db.GetContext(ctx, &tat, s.db.Rebind(`SELECT tat FROM user_message_rate WHERE user_id = ?`), userID); err != nil {
		return false, 0, fmt.Errorf("store: read a message rate: %w", err)
	}
	return false, time.Duration(max(tat-at-tol, 1)) * time.Microsecond, nil
}

// GiveMessage gives back a message TakeMessage took (its post was refused after all).
func (s *Store) GiveMessage(ctx context.Context, userID string, interval time.Duration) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE user_message_rate SET tat = tat - CAST(? AS BIGINT) WHERE user_id = ?`),
		interval.Microseconds(), userID)
	if err != nil {
		return fmt.Errorf("store: give a message back: %w", err)
	}
	return nil
}

// RunningElsewhere counts userID's generations running on replicas other than owner:
// with this replica's own, what a per-user limit is checked against across replicas.
func (s *Store) RunningElsewhere(ctx context.Context, userID, owner string) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.db.Rebind(`SELECT COUNT(*) FROM messages
		WHERE user_id = ? AND role = 'assistant' AND status IN ('pending', 'streaming') AND owner <> ?`), userID, owner)
	if err != nil {
		return 0, fmt.Errorf("store: count running generations: %w", err)
	}
	return n, nil
}
