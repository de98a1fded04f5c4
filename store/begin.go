package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// lockedSession is the session row a turn begins on, with what would stop the turn: the
// user's earlier message with the same client_request_id, in any session ("user message id,
// reply id, session id", space-separated) and a running generation; and with what the
// turn's plan would find (Seen).
type lockedSession struct {
	Session
	Seen
	Duplicate string `db:"duplicate"`
	Running   string `db:"running"`
}

// errSessionMoved is the answer of a begin whose session changed between its read and its
// write: nothing was written, and CreateTurn reads the session again.
var errSessionMoved = errors.New("store: create turn: the session changed while the turn began")

// createTurnTx is one attempt of CreateTurn. On PostgreSQL a turn in an existing session is
// two round trips and no transaction of its own (beginOnRead), one in a session this
// replica has just created; a new session, which must not exist unless the turn does,
// takes a transaction: BEGIN, the session inserted, found by the lock like any other (not
// when guessed), the write, COMMIT (beginInTx). SQLite always takes its transaction: in
// process, it costs no round trips.
func (s *Store) createTurnTx(ctx context.Context, user, assistant *Message, start TurnStart) error {
	if s.isPostgres() {
		// Prepared before any transaction: preparing in one would wait for a second
		// connection while holding one (see prepared.go). After the first turn, a map
		// lookup each.
		for _, q := range []string{s.lockQuery(true), s.lockQuery(false), writeTurnPG, writeGuessedPG} {
			if _, err := s.prepared(ctx, q); err != nil {
				return fmt.Errorf("store: create turn: prepare: %w", err)
			}
		}
		if start.NewSession == nil {
			return s.beginOnRead(ctx, user, assistant, start)
		}
	}
	return s.beginInTx(ctx, user, assistant, start)
}

// beginOnRead is a PostgreSQL turn in an existing session: the session read with its
// conflicts (no lock, no transaction), then writeTurnPG, whose one statement writes the turn
// only if the session is still as read (its updated_at and metadata). A concurrent turn in
// the same session changes both, so the slower of two writes nothing and its next read
// finds the other running; a repeated client_request_id elsewhere still meets the unique
// index. That is two round trips instead of BEGIN, lock, write and COMMIT, and no row lock.
//
// A session this replica created and has not begun a turn in yet is known without the read
// (freshSessions): the turn is locked in on that guess and written at once (writeGuess),
// just after the turn has sent its upstream request (lockInGuess). A first turn is then one
// round trip, and its begin commits while the upstream works on the reply.
func (s *Store) beginOnRead(ctx context.Context, user, assistant *Message, start TurnStart) error {
	var g guessed
	if guess, ok := s.fresh.take(user.SessionID, user.UserID, time.Now()); ok { // whatever follows, not fresh
		g = lockInGuess(guess, user, assistant, start)
	}
	if done, err := s.writeGuess(ctx, nil, &g, user, assistant, start.Lease); done {
		return err
	}
	var row lockedSession
	err := s.getFixed(ctx, &row, s.lockQuery(false), user.ClientRequestID, true, user.SessionID)
	return s.writeOnRead(ctx, nil, &row, err, user, assistant, start)
}

// beginInTx is a turn begun in a transaction: BEGIN, a new session inserted, the session
// found by the lock like any other, the write, COMMIT (a conflict rolls the session back
// with the rest). On PostgreSQL a turn that starts its session is locked in on the session
// it inserts before the transaction begins, as a fresh session's is (beginOnRead), and
// written without the lock's read (writeGuess); not when it has a client_request_id: it
// may be a retry, which the read finds, and its turn would have been started for nothing.
// On SQLite a turn in an existing session is locked in on a read before the transaction
// (lockInOnRead), which the transaction's read confirms.
func (s *Store) beginInTx(ctx context.Context, user, assistant *Message, start TurnStart) error {
	var g guessed
	switch {
	case s.isPostgres() && start.NewSession != nil && user.ClientRequestID == "" && fillSession(start.NewSession) == nil:
		g = lockInGuess(s.fresh.created(start.NewSession), user, assistant, start)
	case !s.isPostgres() && start.NewSession == nil:
		g = s.lockInOnRead(ctx, user, assistant, start)
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create turn: %w", err)
	}
	defer tx.Rollback()
	if start.NewSession != nil {
		if err := s.insertSession(ctx, tx, start.NewSession); err != nil {
			return fmt.Errorf("store: create turn: %w", err)
		}
	}
	if err := s.writeInTx(ctx, tx, &g, user, assistant, start); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create turn: commit: %w", err)
	}
	return nil
}

// writeInTx writes the turn in tx: a turn locked in on a guess, when the database confirms
// it (writeGuess); a turn locked in on a read before tx (g.read), when tx's read finds the
// session as that read did; else a turn locked in on tx's read.
func (s *Store) writeInTx(ctx context.Context, tx *sqlx.Tx, g *guessed, user, assistant *Message, start TurnStart) error {
	if g.read == nil {
		if done, err := s.writeGuess(ctx, tx, g, user, assistant, start.Lease); done {
			return err
		}
	}
	var row lockedSession
	err := s.getFixedTx(ctx, tx, &row, s.lockQuery(true), user.ClientRequestID, true, user.SessionID)
	if g.turn != nil && err == nil && sameRead(&row, g.read) {
		return s.writeLocked(ctx, tx, user, assistant, start.Lease, g.turn)
	}
	g.drop(user, assistant)
	return s.writeOnRead(ctx, tx, &row, err, user, assistant, start)
}

// guessed is a turn locked in before the begin's write (nil when there was none): on a
// guess of its session, before any read, or on a read outside the write's transaction
// (read, then); and the messages' phases before that lock-in set them.
type guessed struct {
	turn   *lockedTurn
	read   *lockedSession // the read the turn was locked in on; nil for a guess
	phases [2]string
}

// drop forgets the turn locked in early, and the phases its lock-in set.
func (g *guessed) drop(user, assistant *Message) {
	if g.turn != nil {
		user.Phase, assistant.Phase = g.phases[0], g.phases[1]
	}
	*g = guessed{}
}

// lockInGuess locks the turn in on guess, early (lockInEarly). Its write is to check what
// the guess assumed a read would find (turnVersion.unread).
func lockInGuess(guess *lockedSession, user, assistant *Message, start TurnStart) guessed {
	g := lockInEarly(guess, user, assistant, start)
	if g.turn != nil {
		g.turn.read.unread = &guess.Seen
	}
	return g
}

// lockInOnRead is SQLite's early lock-in of a turn in an existing session: the begin's
// read on the read pool, before the write transaction, and the turn locked in on it
// (lockInEarly). SQLite works in process: without it, the begin's write and commit kept
// the thread until the response headers were out, and the turn, started on the
// transaction's read, sent its upstream request only then. A read that finds a conflict
// locks nothing in: the transaction's read names it. The copy kept of the read is what
// the transaction's read must find again for the write to be this turn's (writeInTx).
func (s *Store) lockInOnRead(ctx context.Context, user, assistant *Message, start TurnStart) guessed {
	if start.Locked == nil {
		return guessed{}
	}
	var row lockedSession
	err := s.getFixed(ctx, &row, s.lockQuery(false), user.ClientRequestID, true, user.SessionID)
	sess, err := conflicts(&row, user.UserID, err)
	if err != nil {
		return guessed{}
	}
	read := *sess
	read.Metadata, read.Artifacts = bytes.Clone(sess.Metadata), bytes.Clone(sess.Artifacts) // the turn's Prepare may change sess
	g := lockInEarly(sess, user, assistant, start)
	if g.turn != nil {
		g.read = &read
	}
	return g
}

// sameRead reports whether the transaction's read, row, found the session as the early
// read did (nil: there was none). Both come from the same query and scan, so any field
// that differs is a change. It puts row's times in UTC first, as conflicts did the early
// read's.
func sameRead(row, early *lockedSession) bool {
	if early == nil {
		return false
	}
	row.utc()
	return reflect.DeepEqual(*row, *early)
}

// lockInEarly locks the turn in on sess before the begin's write (none without a Locked
// to start it, or when its Prepare failed: the write's read locks it in again, or not).
//
// It then yields, so that the turn Locked has just started plans and sends its upstream
// request before the begin's write. A statement sent to PostgreSQL on a busy core can hold
// the sending thread while the backend it wakes does the work (Linux runs a backend woken
// by a socket write on the writer's core, ahead of the writer: seen with perf's sched
// events on the loadbench machine, about half a millisecond of the begin's write), and
// SQLite's write is in process; with one thread either holds the whole replica. Turn by
// turn at c=1 against the build without the yield, loadbench's turn in a fresh session on
// PostgreSQL: first delta p50 5.49, 4.82 → 4.84, 4.55 ms (docs/performance.md).
func lockInEarly(sess *lockedSession, user, assistant *Message, start TurnStart) guessed {
	g := guessed{phases: [2]string{user.Phase, assistant.Phase}}
	if start.Locked == nil {
		return g
	}
	locked, err := lockIn(sess, user, assistant, start)
	if err != nil {
		user.Phase, assistant.Phase = g.phases[0], g.phases[1]
		return g
	}
	g.turn = locked
	runtime.Gosched()
	return g
}

// writeGuess writes a turn locked in on a guess (g.turn), without the begin's read: in tx,
// or on the pool when tx is nil. Its statement, writeGuessedPG, checks in the database what
// the read would have found and the guess assumed. It reports whether that settled the
// begin: written, or refused by a unique index (CreateTurn reads again and names the
// conflict). A guess the database did not confirm wrote nothing: g is dropped, and the
// begin goes on to its read; the turn is locked in again on what that finds.
func (s *Store) writeGuess(ctx context.Context, tx *sqlx.Tx, g *guessed, user, assistant *Message, lease Lease) (bool, error) {
	if g.turn == nil {
		return false, nil
	}
	if err := s.writeLocked(ctx, tx, user, assistant, lease, g.turn); !errors.Is(err, errSessionMoved) {
		return true, err
	}
	g.drop(user, assistant)
	return false, nil
}

// writeOnRead locks the turn in on what the begin's read found (row, err) and writes it.
func (s *Store) writeOnRead(ctx context.Context, tx *sqlx.Tx, row *lockedSession, err error, user, assistant *Message, start TurnStart) error {
	sess, err := conflicts(row, user.UserID, err)
	if err != nil {
		return err
	}
	s.fresh.read(sess)
	locked, err := lockIn(sess, user, assistant, start)
	if err != nil {
		return err
	}
	return s.writeLocked(ctx, tx, user, assistant, start.Lease, locked)
}

// lockedTurn is a turn locked in on its session as read: what its write needs.
type lockedTurn struct {
	events []Event
	write  *Session // the session to write, when the turn's Prepare changed it
	read   turnVersion
}

// lockIn runs the caller's Prepare on the session as read, stamps the first events and
// tells the caller the turn is locked in (Locked), which starts it.
func lockIn(sess *lockedSession, user, assistant *Message, start TurnStart) (*lockedTurn, error) {
	user.Phase, assistant.Phase = cmpOr(user.Phase, sess.Phase), cmpOr(assistant.Phase, sess.Phase)
	read := turnVersion{updatedAt: sess.UpdatedAt, metadata: emptyObject(sess.Metadata)}
	events, changed, err := firstEvents(&sess.Session, sess.Seen, assistant, start)
	if err != nil {
		return nil, err
	}
	stampEvents(events)
	if n := len(events); n > 0 {
		assistant.LastEventID = events[n-1].Seq
	}
	locked := &lockedTurn{events: events, read: read}
	if changed {
		locked.write = &sess.Session
	}
	if start.Locked != nil {
		start.Locked()
	}
	return locked, nil
}

// writeLocked writes a locked-in turn: in tx, or on the pool when tx is nil (PostgreSQL
// only).
func (s *Store) writeLocked(ctx context.Context, tx *sqlx.Tx, user, assistant *Message, lease Lease, t *lockedTurn) error {
	if err := s.writeTurn(ctx, tx, user, assistant, lease, t.events, t.write, t.read); err != nil {
		if errors.Is(err, errSessionMoved) {
			return err
		}
		return fmt.Errorf("store: create turn: %w", err)
	}
	return nil
}

// turnVersion is the session as a begin read it: its write checks it is unchanged. unread
// is set for a session known without a read (freshSessions), to what the guess assumed
// the read would find: the write checks that too (writeGuessedPG).
type turnVersion struct {
	updatedAt time.Time
	metadata  JSON
	unread    *Seen
}

// lockQuery is the begin's read: the session with its conflicts and what the plan's reads
// would find (Seen), locked for the turn when lock is set (PostgreSQL's transaction path).
func (s *Store) lockQuery(lock bool) string {
	if lock {
		return s.locks[1]
	}
	return s.locks[0]
}

// buildLockQuery builds lockQuery's text, once per store. It finds the session by its id
// alone, and conflicts checks that it is the user's: with the user in the condition, a
// plan made before the table has statistics (a fresh database, or autovacuum off) could
// take the index of the user's sessions, (user_id, created_at, id), which also matches
// both columns, and read every session of the user at every turn for as long as its
// connection lived.
func (s *Store) buildLockQuery(lock bool) string {
	q := `SELECT ` + prefixed("s.", sessionColumns) + `,
		COALESCE((SELECT u.id || ' ' || COALESCE(a.id, '') || ' ' || u.session_id FROM messages u
			LEFT JOIN messages a ON a.reply_to = u.id AND a.role = 'assistant'
			WHERE u.user_id = s.user_id AND u.role = 'user' AND u.client_request_id = ? AND u.client_request_id <> ''
			ORDER BY a.created_at DESC LIMIT 1), '') AS duplicate,
		COALESCE((SELECT id FROM messages WHERE session_id = s.id AND ` + runningAssistant + ` LIMIT 1), '') AS running,
		EXISTS (SELECT 1 FROM messages WHERE session_id = s.id) AS has_history,
		EXISTS (SELECT 1 FROM strategies WHERE session_id = s.id AND user_id = s.user_id) AS has_strategy,
		EXISTS (SELECT 1 FROM prompts WHERE locale = s.locale AND active = ?) AS has_prompts
		FROM sessions s WHERE s.id = ?`
	if lock && s.isPostgres() {
		q += ` FOR UPDATE OF s`
	}
	return s.db.Rebind(q)
}

// conflicts turns the begin's read (row, err) into the session, or the typed error of a
// conflict. Another user's session is not found, whatever its conflicts.
func conflicts(row *lockedSession, userID string, err error) (*lockedSession, error) {
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && row.UserID != userID:
		return nil, ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("store: create turn: %w", err)
	case row.Duplicate != "":
		ids := strings.SplitN(row.Duplicate, " ", 3) // always three: the query joins three ids
		return nil, &DuplicateRequestError{UserMessageID: ids[0], AssistantMessageID: ids[1], SessionID: ids[2]}
	case row.Running != "":
		return nil, &GenerationRunningError{MessageID: row.Running}
	}
	row.utc()
	return row, nil
}

// firstEvents runs the caller's Prepare on the session as read and returns the first events
// and whether the session changed.
func firstEvents(sess *Session, seen Seen, assistant *Message, start TurnStart) ([]Event, bool, error) {
	events := start.Events
	changed := false
	if start.Prepare != nil {
		before := string(sess.Metadata)
		more, err := start.Prepare(sess, seen)
		if err != nil {
			return nil, false, err
		}
		events, changed = append(append([]Event(nil), events...), more...), string(sess.Metadata) != before
	}
	for i := range events {
		if events[i].MessageID != assistant.ID {
			return nil, false, errors.New("store: create turn: a first event belongs to another message")
		}
	}
	if changed {
		sess.UpdatedAt = now()
	}
	return events, changed, nil
}

// writeTurn writes both messages, the first events and, when changed, the session's
// metadata, if the session is still as read: on PostgreSQL as one prepared statement
// (writeTurnPG), in tx or, when tx is nil, as a transaction of its own. errSessionMoved
// says the session had changed and nothing was written.
func (s *Store) writeTurn(ctx context.Context, tx *sqlx.Tx, user, assistant *Message, lease Lease, events []Event, sess *Session, read turnVersion) error {
	if !s.isPostgres() {
		return s.writeTurnEach(ctx, tx, user, assistant, lease, events, sess)
	}
	args, err := writeTurnArgs(user, assistant, lease, events, sess, read)
	if err != nil {
		return err
	}
	q := writeTurnPG
	if read.unread != nil {
		q = writeGuessedPG
	}
	var written int
	switch st := s.ready(q); {
	case tx == nil && st != nil:
		err = st.QueryRowContext(ctx, args...).Scan(&written)
	case tx == nil:
		err = s.db.QueryRowContext(ctx, q, args...).Scan(&written)
	case st != nil:
		err = tx.StmtContext(ctx, st).QueryRowContext(ctx, args...).Scan(&written)
	default:
		err = tx.QueryRowContext(ctx, q, args...).Scan(&written)
	}
	if err == nil && written == 0 {
		return errSessionMoved
	}
	return err
}

// writeTurnPG is a turn's write on PostgreSQL, fixed so that it is prepared once per
// connection and planned once (a text built per turn cost a second round trip and a plan
// each time). Its session update is the check: it matches only while the session's
// updated_at ($55) and metadata ($56) are as read, and writes the new metadata when $54;
// the user's message (no lease), the assistant's (claimed for $45 seconds, none when 0) and
// the first events (arrays) are inserted only if it matched. It returns how many sessions
// matched: 1, or 0 when the session changed (or went) since the read.
const writeTurnPG = writeTurnSession + `WHERE id = $53 AND updated_at = $55::timestamptz AND metadata = $56
	RETURNING id
` + writeTurnRest

// writeGuessedPG is writeTurnPG for a session nobody read (writeGuess): its session
// update also checks what the begin's read would have found and the guess assumed (Seen of
// a session without turns: no message, no strategy, and whether its locale has a stored
// prompt active, $57), so a guess the database does not confirm writes nothing. That the
// session is the user's, freshSessions.take checked: this replica created it for them, and
// a session's user never changes. A condition on user_id here let PostgreSQL reach the
// session through the user's sessions, (user_id, created_at, id), in a generic plan made
// on a table without statistics (a fresh database, or autovacuum off) and kept for the
// connection's life: at 20,000 sessions of one user that read 211 buffers in 2.2 ms
// against 4 in 0.05 ms by the key (TestKeyedReadsUseTheKey).
const writeGuessedPG = writeTurnSession + `WHERE id = $53 AND updated_at = $55::timestamptz AND metadata = $56
		AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = $53)
		AND NOT EXISTS (SELECT 1 FROM strategies x WHERE x.session_id = $53 AND x.user_id = $3)
		AND EXISTS (SELECT 1 FROM prompts p WHERE p.locale = sessions.locale AND p.active) = $57::bool
	RETURNING id
` + writeTurnRest

// writeTurnSession and writeTurnRest are writeTurnPG and writeGuessedPG but for the
// condition of the session update.
const (
	writeTurnSession = `WITH s AS (
	UPDATE sessions SET metadata = CASE WHEN $54::bool THEN $51 ELSE metadata END,
		updated_at = CASE WHEN $54::bool THEN $52::timestamptz ELSE updated_at END
	`
	writeTurnRest = `), u AS (
	INSERT INTO messages (` + messageInsertColumns + `)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
		NULL
	WHERE EXISTS (SELECT 1 FROM s)
), a AS (
	INSERT INTO messages (` + messageInsertColumns + `)
	SELECT $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44,
		CASE WHEN $45::float8 > 0 THEN now() + make_interval(secs => $45::float8) END
	WHERE EXISTS (SELECT 1 FROM s)
), e AS (
	INSERT INTO message_event_runs (message_id, seq, names, data, times)
	SELECT r.message_id, r.seq, r.names, COALESCE(r.data, ''), r.times -- see commitRows
	FROM unnest(string_to_array($46::text, E'\x1e'), $47::bigint[], string_to_array($48::text, E'\x1e'),
		string_to_array($49::text, E'\x1e'), string_to_array($50::text, E'\x1e'))
		AS r(message_id, seq, names, data, times)
	WHERE EXISTS (SELECT 1 FROM s)
)
SELECT count(*) FROM s`
)

// writeTurnArgs lays a turn's write out as writeTurnPG's parameters.
func writeTurnArgs(user, assistant *Message, lease Lease, events []Event, sess *Session, read turnVersion) ([]any, error) {
	user.Owner, assistant.Owner = "", lease.Owner
	args := make([]any, 0, 57)
	for _, m := range []*Message{user, assistant} {
		args = append(args, m.ID, m.SessionID, m.UserID, m.Role, m.Status, m.Content, m.Phase, m.RequestID,
			m.ClientRequestID, nullString(m.ReplyTo), m.ResponseID, m.ToolCalls, m.GenUI,
			m.StatePatch, m.Validation, m.Usage, m.Error, m.Metadata, m.LastEventID, m.CreatedAt,
			dbTimePtr(m.CompletedAt), m.Owner)
	}
	args = append(args, max(lease.TTL.Seconds(), 0))
	evArgs, err := runArrays(events)
	if err != nil {
		return nil, err
	}
	args = append(args, evArgs...)
	if sess == nil {
		args = append(args, JSON(`{}`), now(), user.SessionID, false)
	} else {
		args = append(args, emptyObject(sess.Metadata), sess.UpdatedAt, sess.ID, true)
	}
	args = append(args, read.updatedAt, read.metadata)
	if read.unread != nil {
		args = append(args, read.unread.Prompts)
	}
	return args, nil
}

// writeTurnEach is writeTurn as separate statements (SQLite: no data-modifying WITH).
func (s *Store) writeTurnEach(ctx context.Context, tx *sqlx.Tx, user, assistant *Message, lease Lease, events []Event, sess *Session) error {
	if err := s.insertMessage(ctx, tx, user, Lease{}); err != nil {
		return err
	}
	if err := s.insertMessage(ctx, tx, assistant, lease); err != nil {
		return err
	}
	if err := s.insertEvents(ctx, tx, events); err != nil {
		return err
	}
	if sess == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, s.db.Rebind(`UPDATE sessions SET metadata = ?, updated_at = ? WHERE id = ?`),
		emptyObject(sess.Metadata), sess.UpdatedAt, sess.ID)
	return err
}

// prefixed qualifies every column of a select list with prefix ("s.").
func prefixed(prefix, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}
