package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jmoiron/sqlx"
)

// Prompt is one stored version of a prompt text (a skill file, docs/turn.md). Admins
// store versions and activate one; the active version of a name and locale overrides the
// embedded file, so a prompt can be changed and rolled back without a release. Name is
// the embedded file's name, Locale "en" or "zh".
type Prompt struct {
	ID        string    `db:"id" json:"id"`
	Name      string    `db:"name" json:"name"`
	Locale    string    `db:"locale" json:"locale"`
	Body      string    `db:"body" json:"body"`
	Version   int       `db:"version" json:"version"`
	Active    bool      `db:"active" json:"active"`
	CreatedBy string    `db:"created_by" json:"created_by"`
	CreatedAt time.Time `db:"created_at" json:"created_at"`
}

// promptColumns is the column list of prompts, for INSERT and SELECT alike.
const promptColumns = `id, name, locale, body, version, active, created_by, created_at`

// promptLockClass is the first key of the PostgreSQL advisory locks that serialise writes
// to one prompt name and locale; the second is a hash of the two. The two-key form has its
// own key space, apart from the one-key lock of Migrate.
const promptLockClass int32 = 0x70726f6d // "prom"

// CreatePrompt stores a new, inactive version of p.Name in p.Locale, numbered one above the
// highest existing version of that name and locale (1 for the first), and writes the id
// (a UUIDv7 where empty), version, active flag and time (now where zero) back into p.
// Name, Locale and Body are required. Versions are numbered in one transaction under a
// per-name lock, so concurrent creations get distinct numbers.
func (s *Store) CreatePrompt(ctx context.Context, p *Prompt) error {
	if p.Name == "" || p.Locale == "" || p.Body == "" {
		return errors.New("store: create prompt: name, locale and body are required")
	}
	row := *p
	row.ID = cmpOr(row.ID, NewID())
	row.Active = false
	row.CreatedAt = orNow(row.CreatedAt)
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create prompt: %w", err)
	}
	defer tx.Rollback()
	if err := s.lockPrompt(ctx, tx, row.Name, row.Locale); err != nil {
		return fmt.Errorf("store: create prompt: %w", err)
	}
	err = tx.GetContext(ctx, &row.Version, s.db.Rebind(`SELECT COALESCE(MAX(version), 0) + 1 FROM prompts
		WHERE name = ? AND locale = ?`), row.Name, row.Locale)
	if err != nil {
		return fmt.Errorf("store: create prompt: next version: %w", err)
	}
	_, err = tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO prompts (`+promptColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		row.ID, row.Name, row.Locale, row.Body, row.Version, row.Active, row.CreatedBy, row.CreatedAt)
	if err != nil {
		return fmt.Errorf("store: create prompt: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create prompt: commit: %w", err)
	}
	*p = row
	return nil
}

// ListPrompts returns every stored version, ordered by name, locale and version: the admin
// listing.
func (s *Store) ListPrompts(ctx context.Context) ([]Prompt, error) {
	var out []Prompt
	err := s.rdb.SelectContext(ctx, &out, `SELECT `+promptColumns+` FROM prompts ORDER BY name, locale, version`)
	if err != nil {
		return nil, fmt.Errorf("store: list prompts: %w", err)
	}
	for i := range out {
		out[i].CreatedAt = out[i].CreatedAt.UTC()
	}
	return out, nil
}

// ActivatePrompt makes version id the active one of its name and locale: in one
// transaction it deactivates the others and activates this one, so readers see either the
// old or the new active version, never none or two. Activating the active version changes
// nothing. It returns the activated prompt, or ErrNotFound when no version has that id.
func (s *Store) ActivatePrompt(ctx context.Context, id string) (*Prompt, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: activate prompt: %w", err)
	}
	defer tx.Rollback()
	p, err := s.activatePromptTx(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: activate prompt: commit: %w", err)
	}
	return p, nil
}

// activatePromptTx does the work of ActivatePrompt inside tx. The deactivation runs first:
// the partial unique index prompts_one_active_idx allows one active row per name and
// locale at every statement.
func (s *Store) activatePromptTx(ctx context.Context, tx *sqlx.Tx, id string) (*Prompt, error) {
	var p Prompt
	get := s.db.Rebind(`SELECT ` + promptColumns + ` FROM prompts WHERE id = ?`)
	err := tx.GetContext(ctx, &p, get, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: activate prompt: %w", err)
	}
	if err := s.lockPrompt(ctx, tx, p.Name, p.Locale); err != nil {
		return nil, fmt.Errorf("store: activate prompt: %w", err)
	}
	_, err = tx.ExecContext(ctx, s.db.Rebind(`UPDATE prompts SET active = ?
		WHERE name = ? AND locale = ? AND active = ? AND id <> ?`), false, p.Name, p.Locale, true, id)
	if err != nil {
		return nil, fmt.Errorf("store: activate prompt: deactivate others: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.db.Rebind(`UPDATE prompts SET active = ? WHERE id = ?`), true, id); err != nil {
		return nil, fmt.Errorf("store: activate prompt: %w", err)
	}
	p.Active = true
	p.CreatedAt = p.CreatedAt.UTC()
	return &p, nil
}

// DeactivatePrompt makes version id inactive, so its name and locale are back to the
// embedded text from the next turn on (deactivating an inactive version changes nothing).
// It returns the prompt, or ErrNotFound when no version has that id.
func (s *Store) DeactivatePrompt(ctx context.Context, id string) (*Prompt, error) {
	var p Prompt
	err := s.db.GetContext(ctx, &p, s.db.Rebind(`UPDATE prompts SET active = ? WHERE id = ? RETURNING `+promptColumns), false, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: deactivate prompt: %w", err)
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return &p, nil
}

// ActivePrompts returns the body of every active prompt version in locale, by name: a turn
// reads them once, in one query (usually none is active and the embedded files apply).
func (s *Store) ActivePrompts(ctx context.Context, locale string) (map[string]string, error) {
	var rows []struct {
		Name string `db:"name"`
		Body string `db:"body"`
	}
	err := s.selectFixed(ctx, &rows, `SELECT name, body FROM prompts WHERE locale = ? AND active = ?`, locale, true)
	if err != nil {
		return nil, fmt.Errorf("store: active prompts: %w", err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Body
	}
	return out, nil
}

// ActivePrompt returns the active version of name in locale, or ErrNotFound when none is
// active (the caller then uses the embedded file).
func (s *Store) ActivePrompt(ctx context.Context, name, locale string) (*Prompt, error) {
	var p Prompt
	err := s.rdb.GetContext(ctx, &p, s.rdb.Rebind(`SELECT `+promptColumns+` FROM prompts
		WHERE name = ? AND locale = ? AND active = ?`), name, locale, true)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: active prompt: %w", err)
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return &p, nil
}

// lockPrompt serialises, until tx ends, the transactions that number or activate versions
// of one name and locale. On PostgreSQL it takes a transaction-scoped advisory lock; on
// SQLite the writer's BEGIN IMMEDIATE already holds the database's only write lock.
func (s *Store) lockPrompt(ctx context.Context, tx *sqlx.Tx, name, locale string) error {
	if !s.isPostgres() {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(name + "\x00" + locale))
	key := int32(h.Sum32())
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, promptLockClass, key); err != nil {
		return fmt.Errorf("lock %s/%s: %w", name, locale, err)
	}
	return nil
}
