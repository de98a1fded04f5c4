package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// SQLite's write-ahead log is checkpointed (its pages copied back into the database file)
// by a goroutine of the store's own, on a connection of its own, instead of by whichever
// commit happens to cross SQLite's threshold. A checkpoint run inside a commit held that
// commit, and every event waiting for it, for several milliseconds: at a paced reply it set
// the p99 of the gap between a stream's frames. A PASSIVE checkpoint on another connection
// takes no lock a writer needs, so commits go on while it copies.
//
// A checkpoint that copied the whole log lets the next writer start the log over, and
// SQLite syncs a restarted log's header to disk before that writer's first frame (even at
// synchronous=NORMAL, where a commit itself never syncs): an fsync inside whichever commit
// came next. So the checkpointer restarts the log itself, at once, with a one-page write on
// the writer connection (restartLog): the sync falls in the quiet after a checkpoint, and a
// commit that collides with it waits for the writer connection as it would have waited for
// its own sync. A log holding only that page is not checkpointed again (the next writer
// would restart it, sync and all): a checkpoint waits until a row was written, which the
// writer connection's total_changes() tells (the page is no row).
//
// A checkpoint's syncs take the disk's flush however little they write, and a paced reply
// commits each frame alone, then waits for the model. A checkpoint started at any moment
// had its syncs fall on the next frame's path now and then, and with GOMAXPROCS=1 held that
// frame until they ended. So a checkpoint starts just after an event-log commit
// (afterCommit), in the quiet before the next frame; under load a commit comes within a
// millisecond, and with none the checkpoint goes ahead anyway.
//
// (Asking the kernel to write the log's pages ahead of the checkpoint's sync, with Linux's
// sync_file_range, was tried and removed: loadbench showed no figure it moved beyond the
// noise, docs/performance.md.)
const (
	// sqliteCheckpointEvery is how soon a checkpoint follows one that found new frames:
	// often enough that each copies a few pages, not thousands.
	sqliteCheckpointEvery = 100 * time.Millisecond
	// sqliteCheckpointSettle is how long after an event-log commit its checkpoint starts:
	// time for the commit's frames to reach their clients first.
	sqliteCheckpointSettle = time.Millisecond
	// sqliteCheckpointIdle is the longest wait between checkpoints once the log has stopped
	// growing; the wait doubles up to it, so an idle server wakes once a second.
	sqliteCheckpointIdle = time.Second
	// sqliteAutoCheckpoint (pages) is the writer's own threshold, left as a backstop for a
	// log the background checkpoints cannot keep up with, well above SQLite's default so
	// that it rarely fires.
	sqliteAutoCheckpoint = 10000
)

// applicationID is the SQLite file's application id (PRAGMA application_id, the header
// field that names the program a database file belongs to): "PhFl". Writing it is
// restartLog's one-page write.
const applicationID = 0x5068466c

// startCheckpoints runs checkpoints on db (one connection, not query-only) until the
// store closes; Close waits for it.
func (s *Store) startCheckpoints(db *sqlx.DB) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.checkpointLoop(db)
	}()
}

// checkpointLoop checkpoints soon after rows are written and backs off while none are. A
// failed step is tried again at the next tick; meanwhile the writer's threshold bounds the
// log, and a failing disk shows on the next write.
func (s *Store) checkpointLoop(db *sqlx.DB) {
	wait := sqliteCheckpointEvery
	t := time.NewTimer(wait)
	defer t.Stop()
	seen := int64(-1) // the writer's changes when the last checkpoint began
	for {
		if !s.sleep(t, wait) {
			return
		}
		wait = min(2*wait, sqliteCheckpointIdle)
		// Read before the checkpoint: a row written after it shows at the next tick.
		if n, err := s.writerChanges(s.bg); err == nil && n != seen {
			if !s.afterCommit(t, sqliteCheckpointEvery, sqliteCheckpointSettle) {
				return
			}
			if err := s.checkpointAndRestart(db); err == nil {
				seen, wait = n, sqliteCheckpointEvery
			}
		}
	}
}

// sleep waits d on t and reports false if the store closed meanwhile.
func (s *Store) sleep(t *time.Timer, d time.Duration) bool {
	t.Reset(d)
	select {
	case <-s.bg.Done():
		return false
	case <-t.C:
		return true
	}
}

// noteCommit tells the checkpointer that an event-log commit has just ended (afterCommit).
// It never waits: a note already pending says the same.
func (s *Store) noteCommit() {
	select {
	case s.commits <- struct{}{}:
	default: // pending already, or nil where nothing checkpoints
	}
}

// afterCommit waits for the next event-log commit, at most d, and then settle more,
// resetting t; it reports false if the store closed meanwhile. A note left from before the
// call is no news: that commit's quiet may be over.
func (s *Store) afterCommit(t *time.Timer, d, settle time.Duration) bool {
	select {
	case <-s.commits:
	default:
	}
	t.Reset(d)
	select {
	case <-s.bg.Done():
		return false
	case <-t.C:
		return true // no commit: no paced frame to keep clear of
	case <-s.commits:
	}
	return s.sleep(t, settle)
}

// checkpointAndRestart copies what it can of the log without waiting for readers or the
// writer, and restarts the log when all of it was copied.
func (s *Store) checkpointAndRestart(db *sqlx.DB) error {
	var busy int
	var frames, copied int64
	if err := db.QueryRowContext(s.bg, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("store: checkpoint: %w", err)
	}
	if frames > 0 && copied == frames {
		return s.restartLog(s.bg)
	}
	return nil
}

// restartLog makes the writer start SQLite's log over, once a checkpoint has copied all of
// it, by rewriting the file's application id: a one-page write of a page no reader or
// writer waits on. SQLite starts the log over only when no reader still reads from it;
// otherwise the page is appended and a later checkpoint copies it.
func (s *Store) restartLog(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID))
	return err
}

// writerChanges is total_changes() on the writer connection, which every write of the
// store's goes through: the rows it inserted, updated or deleted since it opened.
// restartLog's write changes no row.
func (s *Store) writerChanges(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, "SELECT total_changes()").Scan(&n)
	return n, err
}
