package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// The statuses of a JSON skill's run.
const (
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
)

// SkillRun is one run of a JSON skill (docs/json-skills.md): what went in, what came out and
// how. Output is the last answer that matched the output schema, kept even when a rule then
// failed the run; Error is {"code", "message"} on a failed run; Meta is how the answer was
// got (model calls, windows, endpoint, mode, usage).
type SkillRun struct {
	ID        string `db:"id" json:"id"`
	UserID    string `db:"user_id" json:"-"`
	Skill     string `db:"skill" json:"skill"`
	Version   string `db:"version" json:"version"`
	Status    string `db:"status" json:"status"`
	Locale    string `db:"locale" json:"locale"`
	SourceID  string `db:"source_id" json:"source_id"`
	Input     JSON   `db:"input" json:"-"`
	Output    JSON   `db:"output" json:"output"`
	Error     JSON   `db:"error" json:"error"`
	Meta      JSON   `db:"meta" json:"meta"`
	Duplicate bool   `db:"duplicate" json:"duplicate"`
	// Fingerprint is a has_question run's question fingerprint when its skill
	// de-duplicates and it names a source, or [StateMark] and the answer's status for its
	// other answers (the source showed no question); "" otherwise.
	Fingerprint string         `db:"fingerprint" json:"-"`
	JobID       sql.NullString `db:"job_id" json:"-"`
	CreatedAt   time.Time      `db:"created_at" json:"created_at"`
}

// skillRunColumns is the column list of skill_runs, for INSERT and SELECT alike.
const skillRunColumns = `id, user_id, skill, version, status, locale, source_id, input, output, error, meta,
	duplicate, fingerprint, job_id, created_at`

// skillRunLockClass is the first key of the advisory locks that serialise the runs of one
// user, skill and source, so two replicas cannot both find no earlier question and both
// call the same one new ("skil").
const skillRunLockClass int32 = 0x736b696c

// StateMark starts a fingerprint that records a source's state rather than a question: such
// a run is never a duplicate, and it ends the wait of the question before it.
const StateMark = "~"

// SaveSkillRun stores run, filling its id (a UUIDv7 where empty) and time (now where zero).
// A run with a question's Fingerprint and a SourceID is a duplicate when the same user's
// latest earlier run of the skill for that source with a fingerprint had the same one and
// is younger than window; Duplicate is set accordingly. The check and the insert are one transaction under
// a lock per user, skill and source, so the answer holds across replicas.
func (s *Store) SaveSkillRun(ctx context.Context, run *SkillRun, window time.Duration) error {
	row := *run
	row.ID = cmpOr(row.ID, NewID())
	row.CreatedAt = orNow(row.CreatedAt)
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: save skill run: %w", err)
	}
	defer tx.Rollback()
	if row.Fingerprint != "" && !strings.HasPrefix(row.Fingerprint, StateMark) && row.SourceID != "" {
		if row.Duplicate, err = s.repeatsQuestion(ctx, tx, &row, window); err != nil {
			return fmt.Errorf("store: save skill run: %w", err)
		}
	}
	if err := s.insertSkillRun(ctx, tx, &row); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: save skill run: commit: %w", err)
	}
	*run = row
	return nil
}

// insertSkillRun writes row in tx.
func (s *Store) insertSkillRun(ctx context.Context, tx *sqlx.Tx, row *SkillRun) error {
	_, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO skill_runs (`+skillRunColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		row.ID, row.UserID, row.Skill, row.Version, row.Status, row.Locale, row.SourceID, emptyObject(row.Input),
		row.Output, row.Error, emptyObject(row.Meta), row.Duplicate, row.Fingerprint, row.JobID, row.CreatedAt)
	if err != nil {
		return fmt.Errorf("store: save skill run: %w", err)
	}
	return nil
}

// repeatsQuestion reports whether row asks the question its source's latest earlier one
// asked, within window.
func (s *Store) repeatsQuestion(ctx context.Context, tx *sqlx.Tx, row *SkillRun, window time.Duration) (bool, error) {
	if s.isPostgres() {
		h := fnv.New32a()
		h.Write([]byte(row.UserID + "\x00" + row.Skill + "\x00" + row.SourceID))
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, skillRunLockClass, int32(h.Sum32())); err != nil {
			return false, fmt.Errorf("lock source %s: %w", row.SourceID, err)
		}
	}
	var last struct {
		Fingerprint string    `db:"fingerprint"`
		CreatedAt   time.Time `db:"created_at"`
	}
	err := tx.GetContext(ctx, &last, s.db.Rebind(`SELECT fingerprint, created_at FROM skill_runs
		WHERE user_id = ? AND skill = ? AND source_id = ? AND fingerprint <> ''
		ORDER BY created_at DESC, id DESC LIMIT 1`), row.UserID, row.Skill, row.SourceID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("latest question of %s: %w", row.SourceID, err)
	}
	return last.Fingerprint == row.Fingerprint && row.CreatedAt.Sub(last.CreatedAt.UTC()) < window, nil
}

// GetSkillRun returns userID's run id, or ErrNotFound (another user's run included).
func (s *Store) GetSkillRun(ctx context.Context, id, userID string) (*SkillRun, error) {
	var run SkillRun
	err := s.rdb.GetContext(ctx, &run, s.rdb.Rebind(`SELECT `+skillRunColumns+` FROM skill_runs WHERE id = ? AND user_id = ?`), id, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get skill run: %w", err)
	}
	run.CreatedAt = run.CreatedAt.UTC()
	return &run, nil
}

// RunFilter narrows a list of runs; empty fields match every run.
type RunFilter struct {
	Skill, SourceID string
}

// ListSkillRunsPage returns up to limit of userID's runs matching f, newest first, after the
// run at after (nil: from the newest).
func (s *Store) ListSkillRunsPage(ctx context.Context, userID string, f RunFilter, after *TimeKey, limit int) ([]SkillRun, error) {
	where, args := `WHERE user_id = ?`, []any{userID}
	if f.Skill != "" {
		where, args = where+` AND skill = ?`, append(args, f.Skill)
	}
	if f.SourceID != "" {
		where, args = where+` AND source_id = ?`, append(args, f.SourceID)
	}
	if after != nil {
		where += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, dbTime(after.CreatedAt), dbTime(after.CreatedAt), after.ID)
	}
	var out []SkillRun
	err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT `+skillRunColumns+` FROM skill_runs `+where+
		` ORDER BY created_at DESC, id DESC LIMIT ?`), append(args, pageLimit(limit))...)
	if err != nil {
		return nil, fmt.Errorf("store: list skill runs: %w", err)
	}
	for i := range out {
		out[i].CreatedAt = out[i].CreatedAt.UTC()
	}
	return out, nil
}
