package store

import (
	"context"
	"fmt"
	"time"
)

// MaxPage is the most rows one page may hold: the Page methods clamp their limit to it, so
// the memory a list request costs is bounded whatever the caller asks.
const MaxPage = 1000

// TimeKey is a row's position in a list ordered by creation time, then id (sessions,
// messages, transitions): the key of the last row of a page, after which the next starts.
type TimeKey struct {
	CreatedAt time.Time
	ID        string
}

// PromptKey is a prompt version's position in the admin listing (name, locale, version).
type PromptKey struct {
	Name    string
	Locale  string
	Version int
}

// pageLimit clamps limit to 1..MaxPage.
func pageLimit(limit int) int { return min(max(limit, 1), MaxPage) }

// ListSessionsPage is ListSessions one page at a time (keyset pagination): up to limit of
// userID's sessions, newest first, starting after the session at after (nil: from the
// newest). Callers wanting to know whether more follow ask for one row more than they show.
func (s *Store) ListSessionsPage(ctx context.Context, userID string, after *TimeKey, limit int) ([]Session, error) {
	where, args := `WHERE user_id = ?`, []any{userID}
	if after != nil {
		where += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, dbTime(after.CreatedAt), dbTime(after.CreatedAt), after.ID)
	}
	var out []Session
	err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT `+sessionColumns+` FROM sessions `+where+
		` ORDER BY created_at DESC, id DESC LIMIT ?`), append(args, pageLimit(limit))...)
	if err != nil {
		return nil, fmt.Errorf("store: list sessions page: %w", err)
	}
	for i := range out {
		out[i].utc()
	}
	return out, nil
}

// ListMessagesPage is ListMessages one page at a time: up to limit messages of the session,
// oldest first, after the message at after (nil: from the first). ErrNotFound when the
// session is not userID's.
func (s *Store) ListMessagesPage(ctx context.Context, sessionID, userID string, after *TimeKey, limit int) ([]Message, error) {
	if err := s.owned(ctx, tableSessions, sessionID, userID); err != nil {
		return nil, err
	}
	where, args := afterTime(`WHERE session_id = ?`, []any{sessionID}, after)
	out, err := s.selectMessages(ctx, where+` ORDER BY created_at, id LIMIT ?`, append(args, pageLimit(limit))...)
	if err != nil {
		return nil, fmt.Errorf("store: list messages page: %w", err)
	}
	return out, nil
}

// ListTransitionsPage is ListTransitions one page at a time: up to limit phase moves of the
// session, oldest first, after the one at after. ErrNotFound when the session is not
// userID's.
func (s *Store) ListTransitionsPage(ctx context.Context, sessionID, userID string, after *TimeKey, limit int) ([]Transition, error) {
	if err := s.owned(ctx, tableSessions, sessionID, userID); err != nil {
		return nil, err
	}
	where, args := afterTime(`WHERE session_id = ?`, []any{sessionID}, after)
	var out []Transition
	err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT `+transitionColumns+` FROM phase_transitions `+where+
		` ORDER BY created_at, id LIMIT ?`), append(args, pageLimit(limit))...)
	if err != nil {
		return nil, fmt.Errorf("store: list transitions page: %w", err)
	}
	for i := range out {
		out[i].CreatedAt = out[i].CreatedAt.UTC()
	}
	return out, nil
}

// ListPromptsPage is ListPrompts one page at a time: up to limit stored versions ordered by
// name, locale and version, after the one at after.
func (s *Store) ListPromptsPage(ctx context.Context, after *PromptKey, limit int) ([]Prompt, error) {
	where, args := ``, []any{}
	if after != nil {
		where = `WHERE name > ? OR (name = ? AND (locale > ? OR (locale = ? AND version > ?)))`
		args = append(args, after.Name, after.Name, after.Locale, after.Locale, after.Version)
	}
	var out []Prompt
	err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT `+promptColumns+` FROM prompts `+where+
		` ORDER BY name, locale, version LIMIT ?`), append(args, pageLimit(limit))...)
	if err != nil {
		return nil, fmt.Errorf("store: list prompts page: %w", err)
	}
	for i := range out {
		out[i].CreatedAt = out[i].CreatedAt.UTC()
	}
	return out, nil
}

// afterTime adds the ascending (created_at, id) keyset condition to where.
func afterTime(where string, args []any, after *TimeKey) (string, []any) {
	if after == nil {
		return where, args
	}
	return where + ` AND (created_at > ? OR (created_at = ? AND id > ?))`,
		append(args, dbTime(after.CreatedAt), dbTime(after.CreatedAt), after.ID)
}
