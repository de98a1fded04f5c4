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
// commit, and every event waiting for it, for 5–10 ms: at 20 ms pacing it set the p99 of
// the gap between a stream's frames (loadbench's gap phase: added p99 pooled over rounds
// 1325 µs with it, 434 µs without). A PASSIVE checkpoint on another connection takes no
// lock a writer needs, so commits go on while it copies.
//
// A checkpoint that copied the whole log lets the next writer start the log over, and
// SQLite syncs a restarted log's header to disk before that writer's first frame (even at
// synchronous=NORMAL, where a commit itself never syncs): an fsync of 0.3–0.4 ms on the
// loadbench machine inside whichever commit came next, one commit in six at 20 ms pacing.
// So the checkpointer restarts the log itself, at once, with a one-page write on the
// writer connection (restartLog): the sync falls in the quiet after a checkpoint, and a
// commit that collides with it waits for the writer connection as it would have waited
// for its own sync. A log holding only that page is not checkpointed again (the next
// writer would restart it, sync and all): a checkpoint waits until a row was written, which
// the writer connection's total_changes() tells (the page is no row).
//
// A checkpoint syncs the log before it copies it (at synchronous=NORMAL the commits never
// do), and that sync wrote to disk everything committed since the last one, at full load a
// few megabytes in 3 ms or more. While a goroutine waits in a system call, Go keeps the
// call's P until sysmon takes it back, and sysmon, finding nothing to take in a server whose
// calls are short, sleeps up to 10 ms between looks: with GOMAXPROCS=1 (a one-core
// container, loadbench's arms) each of those syncs held the whole process, its core idle
// in iowait (6% of it at loadbench's c=64). So while the log grows fast the checkpointer
// also asks the kernel, every sqliteWritebackEvery, to start writing the log's new pages
// (logWriteback, Linux's sync_file_range, which waits for nothing): the checkpoint's sync
// then finds little left to write.
//
// Those syncs take the disk's flush however little they write (about half a millisecond
// each, three a checkpoint: the log, the database file, the restarted log's header), and a
// paced reply commits each frame alone, then waits for the model. A checkpoint started at
// any moment had its syncs fall on the next frame's path about one time in fifty at 20 ms
// pacing, at GOMAXPROCS=1 holding that frame until they ended: loadbench's gap phase had
// SQLite's added p99 300–500 µs over the proxy's (perf trace of its system calls: 11 of
// 650 frames waited behind a sync started after their upstream read, p50 1.49 ms from the
// read to the client's writev against 0.67 for the others). So a checkpoint starts just
// after an event-log commit (afterCommit), in the quiet before the next frame; under load
// a commit comes within a millisecond, and with none the checkpoint goes ahead anyway.
const (
	// sqliteCheckpointEvery is how soon a checkpoint follows one that found new frames:
	// often enough that each copies a few pages, not thousands.
	sqliteCheckpointEvery = 100 * time.Millisecond
	// sqliteWritebackEvery is how often, while the log grows fast, the kernel is asked to
	// start writing it: at full load a few hundred kilobytes each time.
	sqliteWritebackEvery = 10 * time.Millisecond
	// sqliteWritebackFrames is the log, in frames found by a checkpoint (1 MiB), from which
	// the log counts as growing fast. Below it the sync has little to write and its time is
	// the disk's flush, which a writeback cannot shorten, while each call held the process
	// for a few dozen microseconds (p50 34 µs, p99 190 at loadbench's 20 ms pacing, whose
	// checkpoints find a few dozen frames; a c=64 sweep's find about a thousand).
	sqliteWritebackFrames = 256
	// sqliteCheckpointSettle is how long after an event-log commit its checkpoint starts:
	// time for the commit's frames to reach their clients first.
	sqliteCheckpointSettle = time.Millisecond
	// sqliteCheckpointIdle is the longest wait between checkpoints once the log has stopped
	// growing; the wait doubles up to it, so an idle server wakes once a second.
	sqliteCheckpointIdle = time.Second
	// sqliteAutoCheckpoint (pages, about 40 MB) is the writer's own threshold, left as a
	// backstop for a log the background checkpoints cannot keep up with; SQLite's default
	// is 1000.
	sqliteAutoCheckpoint = 10000
)

// applicationID is the SQLite file's application id (PRAGMA application_id, the header
// field that names the program a database file belongs to): "PhFl". Writing it is
// restartLog's one-page write.
const applicationID = 0x5068466c

// startCheckpoints runs checkpoints on db (one connection, not query-only) until the
// store closes, and the writeback of the log at logPath; Close waits for it.
func (s *Store) startCheckpoints(db *sqlx.DB, logPath string) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		wb := newLogWriteback(logPath)
		defer wb.close()
		s.checkpointLoop(db, wb)
	}()
}

// checkpointLoop checkpoints soon after rows are written and backs off while none are. A
// failed step is tried again at the next tick; meanwhile the writer's threshold bounds the
// log, and a failing disk shows on the next write.
func (s *Store) checkpointLoop(db *sqlx.DB, wb writeback) {
	wait := sqliteCheckpointEvery
	t := time.NewTimer(wait)
	defer t.Stop()
	seen := int64(-1) // the writer's changes when the last checkpoint began
	fast := false     // the last checkpoint found the log growing fast
	for {
		if !s.pause(t, wait, fast, wb) {
			return
		}
		wait, fast = min(2*wait, sqliteCheckpointIdle), false
		// Read before the checkpoint: a row written after it shows at the next tick.
		if n, err := s.writerChanges(s.bg); err == nil && n != seen {
			if !s.afterCommit(t, sqliteCheckpointEvery, sqliteCheckpointSettle) {
				return
			}
			if frames, err := s.checkpointAndRestart(db); err == nil {
				seen, wait, fast = n, sqliteCheckpointEvery, frames >= sqliteWritebackFrames
			}
		}
	}
}

// writeback is what checkpointLoop needs of logWriteback.
type writeback interface{ start() }

// pause waits d, resetting t, and reports false if the store closed meanwhile. While the
// log grows fast the wait is cut into steps of sqliteWritebackEvery, each ending with
// wb.start.
func (s *Store) pause(t *time.Timer, d time.Duration, fast bool, wb writeback) bool {
	step := d
	if fast {
		step = sqliteWritebackEvery
	}
	for left := d; left > 0; left -= step {
		if !s.sleep(t, min(step, left)) {
			return false
		}
		if fast {
			wb.start()
		}
	}
	return true
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
// writer, and restarts the log when all of it was copied. It returns the frames the log
// held: those written since the last restart.
func (s *Store) checkpointAndRestart(db *sqlx.DB) (int64, error) {
	var busy int
	var frames, copied int64
	if err := db.QueryRowContext(s.bg, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		return 0, err
	}
	if frames > 0 && copied == frames {
		return frames, s.restartLog(s.bg)
	}
	return frames, nil
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
