package store

import (
	"context"
	"database/sql"
	"strings"
	"time"
)

// Hooks for the external test package (store_test), which cannot reach unexported names.

// InsertMessage writes m without the checks of CreateTurn, so tests can hit the unique
// indexes directly.
func (s *Store) InsertMessage(ctx context.Context, m *Message) error {
	return s.insertMessage(ctx, s.db, m, Lease{})
}

// UniqueViolation exposes uniqueViolation.
var UniqueViolation = uniqueViolation

// Index names the store maps to typed errors.
const (
	IdxOneRunning      = idxOneRunning
	IdxClientRequestID = idxClientRequestID
)

// DeleteSession deletes a session row (and, by cascade, everything of it), which no route
// does yet, to check what goes with a message.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(`DELETE FROM sessions WHERE id = ?`), id)
	return err
}

// CountTraces counts the stored traces of a message, whoever owns it.
func (s *Store) CountTraces(ctx context.Context, messageID string) (int, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.db.Rebind(`SELECT count(*) FROM message_traces WHERE message_id = ?`), messageID)
	return n, err
}

// Exec runs a statement on the writer, for tests that set up an older schema.
func (s *Store) Exec(ctx context.Context, query string, args ...any) error {
	_, err := s.db.ExecContext(ctx, s.db.Rebind(query), args...)
	return err
}

// CommitKinds names the event log's commit statements, for ExplainCommitPlan and
// CommitPlans: one message's deltas, several messages' deltas, any other batch, one that
// settles a turn.
var CommitKinds = []string{"delta", "deltas", "events", "settling"}

// commitQuery is the event log's commit statement of a kind (CommitKinds), with its
// parameter count.
func commitQuery(kind string) (string, int) {
	switch kind {
	case "delta":
		return commitDeltaPG, 8
	case "deltas":
		return commitDeltasPG, 9
	case "settling":
		return commitSettlingPG, commitColumns + settlementColumns
	}
	return commitEventsPG, commitColumns
}

// ExplainCommitPlan returns the plan PostgreSQL keeps for an event-log commit statement
// once it plans it generically (as it does for a prepared statement from its sixth run).
func (s *Store) ExplainCommitPlan(ctx context.Context, kind string) (string, error) {
	query, params := commitQuery(kind)
	return s.explainGeneric(ctx, query, params)
}

// ExplainBeginPlan returns the generic plan of a turn's begin read (lockQuery, unlocked).
func (s *Store) ExplainBeginPlan(ctx context.Context) (string, error) {
	return s.explainGeneric(ctx, s.lockQuery(false), 3)
}

// ExplainOwnedPlan returns the generic plan of the owner check of table ("sessions" or
// "messages").
func (s *Store) ExplainOwnedPlan(ctx context.Context, table string) (string, error) {
	return s.explainGeneric(ctx, s.db.Rebind(ownedQuery(table)), 1)
}

// explainGeneric returns the generic plan of query, which takes params parameters.
func (s *Store) explainGeneric(ctx context.Context, query string, params int) (string, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		return "", err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `RESET plan_cache_mode`) // the connection goes back to the pool
	if _, err := conn.ExecContext(ctx, `PREPARE generic_plan AS `+query); err != nil {
		return "", err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DEALLOCATE generic_plan`)
	nulls := strings.TrimSuffix(strings.Repeat("NULL, ", params), ", ")
	rows, err := conn.QueryContext(ctx, `EXPLAIN EXECUTE generic_plan(`+nulls+`)`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		plan.WriteString(line + "\n")
	}
	return plan.String(), rows.Err()
}

// CommitPlans runs an event-log commit statement, prepared, runs times on one connection
// with no rows in it (in the planner's default mode; settling, with one settlement
// announced, as a batch that settles one turn sends) and returns how many of those runs
// PostgreSQL planned generically and how many it planned anew (pg_prepared_statements).
func (s *Store) CommitPlans(ctx context.Context, kind string, runs int) (generic, custom int64, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	query, params := commitQuery(kind)
	if _, err := conn.ExecContext(ctx, `PREPARE commit_runs AS `+query); err != nil {
		return 0, 0, err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DEALLOCATE commit_runs`)
	args := strings.TrimSuffix(strings.Repeat("NULL, ", params), ", ")
	if kind == "settling" {
		args = strings.Repeat("NULL, ", params-1) + "1"
	}
	for range runs {
		if _, err := conn.ExecContext(ctx, `EXECUTE commit_runs(`+args+`)`); err != nil {
			return 0, 0, err
		}
	}
	err = conn.QueryRowContext(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'commit_runs'`).Scan(&generic, &custom)
	return generic, custom, err
}

// QueryString runs a query that returns one text value.
func (s *Store) QueryString(ctx context.Context, query string, args ...any) (string, error) {
	var v string
	err := s.db.GetContext(ctx, &v, s.db.Rebind(query), args...)
	return v, err
}

// MigrateThrough applies the embedded migrations up to and including last, as a replica
// of an older build would have left the schema.
func (s *Store) MigrateThrough(ctx context.Context, last string) error {
	versions, err := s.migrationVersions()
	if err != nil {
		return err
	}
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, s.schemaMigrationsDDL()); err != nil {
		return err
	}
	for _, v := range versions {
		if v > last {
			break
		}
		if _, err := s.applyMigration(ctx, conn, v); err != nil {
			return err
		}
	}
	return nil
}

// EventRows reads the view message_events, as an operator would: each event's seq, name
// and payload (NULL as nil) and time, in order.
func (s *Store) EventRows(ctx context.Context, messageID string) ([]Event, error) {
	rows, err := s.db.QueryContext(ctx, s.db.Rebind(`SELECT seq, name, data, created_at FROM message_events
		WHERE message_id = ? ORDER BY seq`), messageID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e := Event{MessageID: messageID}
		var data sql.NullString
		var at any
		if err := rows.Scan(&e.Seq, &e.Name, &data, &at); err != nil {
			return nil, err
		}
		if data.Valid {
			e.Data = JSON(data.String)
		}
		switch at := at.(type) {
		case time.Time:
			e.CreatedAt = at.UTC()
		case string:
			if e.CreatedAt, err = time.Parse(runTimeRead, at); err != nil {
				return nil, err
			}
			e.CreatedAt = e.CreatedAt.UTC()
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
