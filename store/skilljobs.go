package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The statuses of a JSON-skill job: queued until a replica claims it, running while one
// does, then completed (every input finished) or cancelled.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobCompleted = "completed"
	JobCancelled = "cancelled"
)

// SkillJob is one job of many inputs for one skill (docs/json-skills.md). Done counts the
// inputs whose run is stored, Succeeded and Failed split it.
type SkillJob struct {
	ID              string    `db:"id"`
	UserID          string    `db:"user_id"`
	Skill           string    `db:"skill"`
	Locale          string    `db:"locale"`
	Status          string    `db:"status"`
	Total           int       `db:"total"`
	Done            int       `db:"done"`
	Succeeded       int       `db:"succeeded"`
	Failed          int       `db:"failed"`
	CancelRequested bool      `db:"cancel_requested"`
	Owner           string    `db:"owner"`
	CreatedAt       time.Time `db:"created_at"`
	UpdatedAt       time.Time `db:"updated_at"`
}

// Ended reports whether the job has its final status.
func (j *SkillJob) Ended() bool { return j.Status == JobCompleted || j.Status == JobCancelled }

// skillJobColumns is the column list of skill_jobs read back.
const skillJobColumns = `id, user_id, skill, locale, status, total, done, succeeded, failed, cancel_requested, owner,
	created_at, updated_at`

// JobItem is one input of a job that has not finished.
type JobItem struct {
	Index int  `db:"idx"`
	Input JSON `db:"input"`
}

// JobProgress is what a job's progress event says: after Seq inputs had finished, so many
// had succeeded and failed. Seq is the event's id.
type JobProgress struct {
	Seq       int64 `db:"seq"`
	Succeeded int   `db:"succeeded_after"`
	Failed    int   `db:"failed_after"`
}

// ErrJobLost is returned by the writes of a job's owner once the job is no longer its own
// (another replica took it over after its lease expired, or it ended): the owner stops.
var ErrJobLost = errors.New("store: the job is no longer this replica's")

// CreateSkillJob stores job (queued, its id and times filled where empty) and one item per
// input, in input order, in one transaction.
func (s *Store) CreateSkillJob(ctx context.Context, job *SkillJob, inputs []JSON) error {
	row := *job
	row.ID, row.Status, row.Total = cmpOr(row.ID, NewID()), JobQueued, len(inputs)
	row.CreatedAt = orNow(row.CreatedAt)
	row.UpdatedAt = row.CreatedAt
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create skill job: %w", err)
	}
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO skill_jobs (id, user_id, skill, locale, status, total, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), row.ID, row.UserID, row.Skill, row.Locale, row.Status, row.Total, row.CreatedAt, row.UpdatedAt)
	if err != nil {
		return fmt.Errorf("store: create skill job: %w", err)
	}
	if err := s.insertJobItems(ctx, tx, row.ID, inputs); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create skill job: commit: %w", err)
	}
	*job = row
	return nil
}

// jobItemBatch bounds the rows of one insert of job items (three parameters a row).
const jobItemBatch = 200

// insertJobItems writes the items of job id, a batch at a time.
func (s *Store) insertJobItems(ctx context.Context, tx *sqlx.Tx, id string, inputs []JSON) error {
	for start := 0; start < len(inputs); start += jobItemBatch {
		batch := inputs[start:min(start+jobItemBatch, len(inputs))]
		args := make([]any, 0, 3*len(batch))
		for i, in := range batch {
			args = append(args, id, start+i, emptyObject(in))
		}
		q := `INSERT INTO skill_job_items (job_id, idx, input) VALUES (?, ?, ?)` + strings.Repeat(`, (?, ?, ?)`, len(batch)-1)
		if _, err := tx.ExecContext(ctx, s.db.Rebind(q), args...); err != nil {
			return fmt.Errorf("store: create skill job items: %w", err)
		}
	}
	return nil
}

// GetSkillJob returns userID's job id, or ErrNotFound (another user's job included).
func (s *Store) GetSkillJob(ctx context.Context, id, userID string) (*SkillJob, error) {
	var j SkillJob
	err := s.rdb.GetContext(ctx, &j, s.rdb.Rebind(`SELECT `+skillJobColumns+` FROM skill_jobs WHERE id = ? AND user_id = ?`), id, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get skill job: %w", err)
	}
	j.CreatedAt, j.UpdatedAt = j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	return &j, nil
}

// SkillJobRuns returns the run id of each input of job id in input order, "" for an input
// whose run is not stored (not run yet, or never: a cancelled job's).
func (s *Store) SkillJobRuns(ctx context.Context, id string) ([]string, error) {
	var ids []sql.NullString
	err := s.rdb.SelectContext(ctx, &ids, s.rdb.Rebind(`SELECT run_id FROM skill_job_items WHERE job_id = ? ORDER BY idx`), id)
	if err != nil {
		return nil, fmt.Errorf("store: skill job runs: %w", err)
	}
	out := make([]string, len(ids))
	for i, r := range ids {
		out[i] = r.String
	}
	return out, nil
}

// SkillJobProgress returns the progress of job id after the event at seq after, in order.
func (s *Store) SkillJobProgress(ctx context.Context, id string, after int64) ([]JobProgress, error) {
	var out []JobProgress
	err := s.rdb.SelectContext(ctx, &out, s.rdb.Rebind(`SELECT seq, succeeded_after, failed_after FROM skill_job_items
		WHERE job_id = ? AND seq > ? ORDER BY seq`), id, after)
	if err != nil {
		return nil, fmt.Errorf("store: skill job progress: %w", err)
	}
	return out, nil
}

// ClaimSkillJobs gives lease.Owner up to limit jobs that need a runner: queued ones, and
// running ones whose lease expired (their replica died), oldest first. It returns them as
// claimed.
func (s *Store) ClaimSkillJobs(ctx context.Context, lease Lease, limit int) ([]SkillJob, error) {
	expired, expiredArgs := s.leaseExpired()
	until, untilArgs := s.leaseUntil(lease.TTL)
	pick := `SELECT id FROM skill_jobs WHERE status = 'queued' OR (status = 'running' AND ` + expired + `)
		ORDER BY created_at LIMIT ?`
	if s.isPostgres() {
		pick += ` FOR UPDATE SKIP LOCKED`
	}
	args := append(append([]any{JobRunning, lease.Owner}, untilArgs...), now())
	args = append(append(args, expiredArgs...), limit)
	var out []SkillJob
	err := s.db.SelectContext(ctx, &out, s.db.Rebind(`UPDATE skill_jobs SET status = ?, owner = ?, lease_until = `+until+`,
		updated_at = ? WHERE id IN (`+pick+`) RETURNING `+skillJobColumns), args...)
	if err != nil {
		return nil, fmt.Errorf("store: claim skill jobs: %w", err)
	}
	return out, nil
}

// RenewSkillJobs extends lease.Owner's claim on the running jobs ids and returns those it
// still owns with their cancel flags; a job missing from the answer is no longer its own.
func (s *Store) RenewSkillJobs(ctx context.Context, lease Lease, ids []string) (map[string]bool, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	until, untilArgs := s.leaseUntil(lease.TTL)
	in, inArgs := s.inList(ids)
	args := append(append(untilArgs, lease.Owner), inArgs...)
	var rows []struct {
		ID     string `db:"id"`
		Cancel bool   `db:"cancel_requested"`
	}
	err := s.db.SelectContext(ctx, &rows, s.db.Rebind(`UPDATE skill_jobs SET lease_until = `+until+`
		WHERE owner = ? AND status = 'running' AND id `+in+` RETURNING id, cancel_requested`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: renew skill jobs: %w", err)
	}
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r.ID] = r.Cancel
	}
	return out, nil
}

// inList is "IN (…)" over ids: one array parameter on PostgreSQL, one parameter each on
// SQLite.
func (s *Store) inList(ids []string) (string, []any) {
	if s.isPostgres() {
		return `= ANY(?)`, []any{pq.Array(ids)}
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return `IN (?` + strings.Repeat(`, ?`, len(ids)-1) + `)`, args
}

// PendingJobItems returns the inputs of job id that have not finished, in input order.
func (s *Store) PendingJobItems(ctx context.Context, id string) ([]JobItem, error) {
	var out []JobItem
	err := s.db.SelectContext(ctx, &out, s.db.Rebind(`SELECT idx, input FROM skill_job_items
		WHERE job_id = ? AND run_id IS NULL ORDER BY idx`), id)
	if err != nil {
		return nil, fmt.Errorf("store: pending job items: %w", err)
	}
	return out, nil
}

// FinishJobItem stores run as the run of input idx of job id and counts it done, in one
// transaction fenced by ownership: ErrJobLost when the job is no longer lease.Owner's
// running job, and nothing is written either when the input already finished (false).
func (s *Store) FinishJobItem(ctx context.Context, lease Lease, id string, idx int, run *SkillRun) (bool, error) {
	row := *run
	row.ID, row.CreatedAt = cmpOr(row.ID, NewID()), orNow(row.CreatedAt)
	row.JobID = sql.NullString{String: id, Valid: true}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: finish job item: %w", err)
	}
	defer tx.Rollback()
	succeeded, failed := 0, 1
	if row.Status == RunSucceeded {
		succeeded, failed = 1, 0
	}
	var counts struct {
		Done      int64 `db:"done"`
		Succeeded int   `db:"succeeded"`
		Failed    int   `db:"failed"`
	}
	err = tx.GetContext(ctx, &counts, s.db.Rebind(`UPDATE skill_jobs SET done = done + 1, succeeded = succeeded + ?,
		failed = failed + ?, updated_at = ? WHERE id = ? AND owner = ? AND status = 'running'
		RETURNING done, succeeded, failed`), succeeded, failed, now(), id, lease.Owner)
	if errors.Is(err, sql.ErrNoRows) {
		return false, ErrJobLost
	}
	if err != nil {
		return false, fmt.Errorf("store: finish job item: count: %w", err)
	}
	res, err := tx.ExecContext(ctx, s.db.Rebind(`UPDATE skill_job_items SET run_id = ?, seq = ?, succeeded_after = ?,
		failed_after = ? WHERE job_id = ? AND idx = ? AND run_id IS NULL`), row.ID, counts.Done, counts.Succeeded, counts.Failed, id, idx)
	if err != nil {
		return false, fmt.Errorf("store: finish job item: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err // finished already: the transaction is rolled back
	}
	if err := s.insertSkillRun(ctx, tx, &row); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: finish job item: commit: %w", err)
	}
	*run = row
	return true, nil
}

// EndSkillJob gives lease.Owner's running job id its final status (JobCompleted or
// JobCancelled); ErrJobLost when it is no longer the owner's.
func (s *Store) EndSkillJob(ctx context.Context, lease Lease, id, status string) error {
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE skill_jobs SET status = ?, lease_until = NULL, updated_at = ?
		WHERE id = ? AND owner = ? AND status = 'running'`), status, now(), id, lease.Owner)
	if err != nil {
		return fmt.Errorf("store: end skill job: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: end skill job: %w", err)
	} else if n == 0 {
		return ErrJobLost
	}
	return nil
}

// CancelSkillJob asks userID's job id to stop: inputs not started are not started. A job no
// replica has claimed yet is cancelled at once. It returns the job as it now stands;
// ErrNotFound for another user's job or an unknown id.
func (s *Store) CancelSkillJob(ctx context.Context, id, userID string) (*SkillJob, error) {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE skill_jobs SET cancel_requested = ?,
		status = CASE WHEN status = 'queued' THEN 'cancelled' ELSE status END, updated_at = ?
		WHERE id = ? AND user_id = ? AND status IN ('queued', 'running')`), true, now(), id, userID)
	if err != nil {
		return nil, fmt.Errorf("store: cancel skill job: %w", err)
	}
	return s.GetSkillJob(ctx, id, userID)
}

// ReleaseSkillJobs gives up lease.Owner's claim on its running jobs ids at once (a replica
// shutting down), so another replica takes them over without waiting for the lease to run
// out; their unfinished inputs run there.
func (s *Store) ReleaseSkillJobs(ctx context.Context, lease Lease, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	in, inArgs := s.inList(ids)
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE skill_jobs SET lease_until = NULL
		WHERE owner = ? AND status = 'running' AND id `+in), append([]any{lease.Owner}, inArgs...)...)
	if err != nil {
		return fmt.Errorf("store: release skill jobs: %w", err)
	}
	return nil
}
