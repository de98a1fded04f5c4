package store

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// SQLite's write-ahead log is checkpointed (its pages copied back into the database file)
// by a goroutine of the store's own, on a connection of its own, instead of by whichever
// commit happens to cross SQLite's threshold. A checkpoint run inside a commit held that
// commit, and every event waiting for it, for 5–10 ms: at 20 ms pacing it set the p99 of
// the gap between a stream's frames (loadbench's gap phase: added p99 pooled over rounds
// 1325 µs with it, 434 µs without). A PASSIVE checkpoint on another connection takes no
// lock a writer needs, so commits go on while it copies.
const (
	// sqliteCheckpointEvery is how soon a checkpoint follows one that found new frames:
	// often enough that each copies a few pages, not thousands.
	sqliteCheckpointEvery = 100 * time.Millisecond
	// sqliteCheckpointIdle is the longest wait between checkpoints once the log has stopped
	// growing; the wait doubles up to it, so an idle server wakes once a second.
	sqliteCheckpointIdle = time.Second
	// sqliteAutoCheckpoint (pages, about 40 MB) is the writer's own threshold, left as a
	// backstop for a log the background checkpoints cannot keep up with; SQLite's default
	// is 1000.
	sqliteAutoCheckpoint = 10000
)

// startCheckpoints runs checkpoints on db (one connection, not query-only) until the
// store closes; Close waits for it.
func (s *Store) startCheckpoints(db *sqlx.DB) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.checkpointLoop(db)
	}()
}

// checkpointLoop checkpoints soon after the log grows and backs off while it does not.
func (s *Store) checkpointLoop(db *sqlx.DB) {
	wait := sqliteCheckpointEvery
	t := time.NewTimer(wait)
	defer t.Stop()
	var last walState
	for {
		select {
		case <-s.bg.Done():
			return
		case <-t.C:
		}
		// A failed checkpoint is tried again at the next tick; meanwhile the writer's
		// threshold bounds the log, and a failing disk shows on the next write.
		now, err := checkpoint(s.bg, db)
		if err == nil && now != last {
			wait = sqliteCheckpointEvery
		} else {
			wait = min(2*wait, sqliteCheckpointIdle)
		}
		last = now
		t.Reset(wait)
	}
}

// walState is what PRAGMA wal_checkpoint reports: frames in the log, and frames copied.
type walState struct{ frames, copied int64 }

// checkpoint copies what it can of the log without waiting for readers or the writer.
func checkpoint(ctx context.Context, db *sqlx.DB) (walState, error) {
	var busy int
	var st walState
	err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &st.frames, &st.copied)
	return st, err
}
