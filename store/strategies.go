package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/phaseflow/phaseflow/phases"
)

// Strategy is a trading strategy drafted in a session's strategy phase. It is a row of its
// own, not part of the session artifacts, so that it can be fetched and confirmed by id
// (GET /api/v1/strategies/{id}) and outlives the session (session_id becomes empty when
// the session is deleted). UserID is the owner and never leaves the server.
type Strategy struct {
	ID             string    `db:"id" json:"id"`
	UserID         string    `db:"user_id" json:"-"`
	SessionID      string    `db:"session_id" json:"session_id"`
	Name           string    `db:"name" json:"name"`
	Spec           JSON      `db:"spec" json:"spec"`
	Status         string    `db:"status" json:"status"`
	BacktestStatus string    `db:"backtest_status" json:"backtest_status"`
	CreatedAt      time.Time `db:"created_at" json:"created_at"`
	UpdatedAt      time.Time `db:"updated_at" json:"updated_at"`
}

// strategyColumns is the select list for Strategy; session_id is a nullable foreign key.
const strategyColumns = `id, user_id, COALESCE(session_id, '') AS session_id, name, spec, status,
	backtest_status, created_at, updated_at`

// UpsertStrategy creates st, or updates the strategy that already has st.ID, in one
// transaction, and writes the stored row back into st. The orchestrator calls it with a
// fresh draft (no id) or with the id a validate_strategy tool call returned, which may or
// may not exist yet.
//
// Insert (st.ID empty or unknown): the id (a UUIDv7), the times (now), Status (draft),
// BacktestStatus (none) and Spec ({}) are filled where empty. A non-empty SessionID must
// name a session of st.UserID, else ErrNotFound.
//
// Update (st.ID exists and is st.UserID's): Name, Spec, Status and BacktestStatus are
// written, except that an empty Name, Status or BacktestStatus and a null Spec (nil,
// empty or the literal null) keep the stored value, so a patch that carries only a status
// loses nothing. SessionID and CreatedAt keep the stored values whatever st holds;
// UpdatedAt is stamped with the current time. An id that belongs to another user gives
// ErrNotFound and changes nothing.
func (s *Store) UpsertStrategy(ctx context.Context, st *Strategy) error {
	if st.UserID == "" {
		return errors.New("store: upsert strategy: no user")
	}
	if st.ID == "" {
		st.ID = NewID()
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: upsert strategy: %w", err)
	}
	defer tx.Rollback()
	stored, err := s.upsertStrategyTx(ctx, tx, st)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: upsert strategy: commit: %w", err)
	}
	*st = *stored
	return nil
}

// upsertStrategyTx updates the row with st.ID if there is one, and inserts st otherwise.
// It returns the row as stored. The insert says ON CONFLICT DO NOTHING: on PostgreSQL a
// concurrent upsert of the same new id may insert between the look-up and the insert (the
// insert then waits for it and does nothing), and st is merged into that row instead.
func (s *Store) upsertStrategyTx(ctx context.Context, tx *sqlx.Tx, st *Strategy) (*Strategy, error) {
	if st.SessionID != "" {
	}
	row, err := s.lockStrategy(ctx, tx, st.ID)
	if err != nil {
		return nil, err
	}
	if row != nil {
		return s.updateStrategy(ctx, tx, row, st)
	}
	if err := s.checkStrategySession(ctx, tx, st); err != nil {
		return nil, err
	}
	row = newStrategyRow(st)
	res, err := tx.ExecContext(ctx, s.db.Rebind(`INSERT INTO strategies (id, user_id, session_id, name,
		spec, status, backtest_status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`),
		row.ID, row.UserID, nullString(row.SessionID), row.Name, row.Spec, row.Status,
		row.BacktestStatus, row.CreatedAt, row.UpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("store: upsert strategy: insert: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("store: upsert strategy: insert: %w", err)
	} else if n == 1 {
		return row, nil
	}
	if row, err = s.lockStrategy(ctx, tx, st.ID); err != nil {
		return nil, err
	}
	if row == nil { // the conflicting row was deleted meanwhile
		return nil, fmt.Errorf("store: upsert strategy: %s neither inserted nor found", st.ID)
	}
	return s.updateStrategy(ctx, tx, row, st)
}

// lockStrategy reads the strategy id for update (row-locked on PostgreSQL; SQLite's writer
// holds the write lock already). It returns nil, nil when there is no such row.
func (s *Store) lockStrategy(ctx context.Context, tx *sqlx.Tx, id string) (*Strategy, error) {
	lock := `SELECT ` + strategyColumns + ` FROM strategies WHERE id = ?`
	if s.isPostgres() {
		lock += ` FOR UPDATE`
	}
	var row Strategy
	err := tx.GetContext(ctx, &row, s.db.Rebind(lock), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: upsert strategy: %w", err)
	}
	row.utc()
	return &row, nil
}

// checkStrategySession refuses to attach a new strategy to a session that is not its
// owner's: ErrNotFound, as for any foreign id.
func (s *Store) checkStrategySession(ctx context.Context, tx *sqlx.Tx, st *Strategy) error {
	if st.SessionID == "" {
		return nil
	}
	var n int
	err := tx.GetContext(ctx, &n, s.db.Rebind(`SELECT count(*) FROM sessions WHERE id = ? AND user_id = ?`), st.SessionID, st.UserID)
	if err != nil {
		return fmt.Errorf("store: upsert strategy: check session: %w", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// newStrategyRow is st with the insert defaults filled, leaving st itself as given (the
// update path needs to know which fields were empty).
func newStrategyRow(st *Strategy) *Strategy {
	row := *st
	row.Status = cmpOr(row.Status, phases.StrategyDraft)
	row.BacktestStatus = cmpOr(row.BacktestStatus, phases.BacktestNone)
	row.Spec = emptyObject(row.Spec)
	row.CreatedAt = orNow(row.CreatedAt)
	if row.UpdatedAt.IsZero() {
		row.UpdatedAt = row.CreatedAt
	}
	row.UpdatedAt = dbTime(row.UpdatedAt)
	return &row
}

// updateStrategy checks the owner of the locked row and merges st into it as
// UpsertStrategy describes.
func (s *Store) updateStrategy(ctx context.Context, tx *sqlx.Tx, row, st *Strategy) (*Strategy, error) {
	if row.UserID != st.UserID {
		return nil, ErrNotFound
	}
	row.Name = cmpOr(st.Name, row.Name)
	if !st.Spec.IsNull() {
		row.Spec = st.Spec
	}
	row.Status = cmpOr(st.Status, row.Status)
	row.BacktestStatus = cmpOr(st.BacktestStatus, row.BacktestStatus)
	row.UpdatedAt = now()
	_, err := tx.ExecContext(ctx, s.db.Rebind(`UPDATE strategies SET name = ?, spec = ?, status = ?,
		backtest_status = ?, updated_at = ? WHERE id = ? AND user_id = ?`),
		row.Name, row.Spec, row.Status, row.BacktestStatus, row.UpdatedAt, row.ID, row.UserID)
	if err != nil {
		return nil, fmt.Errorf("store: upsert strategy: update: %w", err)
	}
	return row, nil
}

// GetStrategy returns the strategy id if it belongs to userID, and ErrNotFound otherwise.
func (s *Store) GetStrategy(ctx context.Context, id, userID string) (*Strategy, error) {
	return s.getStrategy(ctx, "get strategy", `WHERE id = ? AND user_id = ?`, id, userID)
}

// LatestStrategy returns the most recently created strategy of a session (the one the
// strategy phase works on), or ErrNotFound when the session has none or is not userID's.
// Creation order, not update order: revising an older strategy does not make it current.
func (s *Store) LatestStrategy(ctx context.Context, sessionID, userID string) (*Strategy, error) {
	return s.getStrategy(ctx, "latest strategy", `WHERE session_id = ? AND user_id = ?
		ORDER BY created_at DESC, id DESC LIMIT 1`, sessionID, userID)
}

// getStrategy reads one strategy from the read pool; op names the caller in errors.
func (s *Store) getStrategy(ctx context.Context, op, where string, args ...any) (*Strategy, error) {
	var st Strategy
	err := s.getFixed(ctx, &st, `SELECT `+strategyColumns+` FROM strategies `+where, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", op, err)
	}
	st.utc()
	return &st, nil
}

// utc puts the times of a scanned strategy in UTC (see Session.utc).
func (st *Strategy) utc() {
	st.CreatedAt = st.CreatedAt.UTC()
	st.UpdatedAt = st.UpdatedAt.UTC()
}
