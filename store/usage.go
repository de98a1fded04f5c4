package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Usage is what one user's model calls cost on one UTC day.
type Usage struct {
	Day          string `db:"day" json:"day"`
	Calls        int64  `db:"calls" json:"calls"`
	InputTokens  int64  `db:"input_tokens" json:"input_tokens"`
	OutputTokens int64  `db:"output_tokens" json:"output_tokens"`
}

// CountCall adds one model call to userID's day (YYYY-MM-DD, UTC) unless the day already
// has limit calls, and reports whether it did: one statement, so replicas counting at once
// never lose a call nor let one past the limit.
func (s *Store) CountCall(ctx context.Context, userID, day string, limit int64) (bool, error) {
	var calls int64
	err := s.db.GetContext(ctx, &calls, s.db.Rebind(`INSERT INTO user_usage (user_id, day, calls) VALUES (?, ?, 1)
		ON CONFLICT (user_id, day) DO UPDATE SET calls = user_usage.calls + 1 WHERE user_usage.calls < ?
		RETURNING calls`), userID, day, limit)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: count a model call: %w", err)
	}
	return true, nil
}

// AddTokens adds a call's tokens to userID's day.
func (s *Store) AddTokens(ctx context.Context, userID, day string, input, output int64) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO user_usage (user_id, day, input_tokens, output_tokens) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_id, day) DO UPDATE SET input_tokens = user_usage.input_tokens + excluded.input_tokens,
		output_tokens = user_usage.output_tokens + excluded.output_tokens`), userID, day, input, output)
	if err != nil {
		return fmt.Errorf("store: add tokens: %w", err)
	}
	return nil
}

// UsageOn is userID's usage on day; a day without calls is zero.
func (s *Store) UsageOn(ctx context.Context, userID, day string) (Usage, error) {
	u := Usage{Day: day}
	err := s.db.GetContext(ctx, &u, s.db.Rebind(`SELECT day, calls, input_tokens, output_tokens FROM user_usage
		WHERE user_id = ? AND day = ?`), userID, day)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Usage{}, fmt.Errorf("store: usage: %w", err)
	}
	return u, nil
}
