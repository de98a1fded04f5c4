package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// ErrSessionChanged is WriteTurn's answer when the session changed between the turn's read
// and its write (another turn, a phase move, a rename): nothing was written; the caller
// reads the session again and decides again.
var ErrSessionChanged = errors.New("store: the session changed while the turn began")

// TurnSession is the session a turn begins in, as ReadTurn found it: the row, and what
// the turn's plan would find besides (Seen). The turn writes only if the session is still
// as read, so Session's UpdatedAt and Metadata must be left as read; a turn that changes
// the session's metadata says so in its TurnWrite.
type TurnSession struct {
	Session
	Seen
	// guessed says the session was not read: this replica created it and answered from
	// memory (freshSessions), and the write checks what a read would have found.
	guessed bool
}

// lockedSession is ReadTurn's row: the session with what would stop the turn, the user's
// earlier message with the same client_request_id, in any session ("user message id, reply
// id, session id", space-separated) and a running generation.
type lockedSession struct {
	TurnSession
	Duplicate string `db:"duplicate"`
	Running   string `db:"running"`
}

// ReadTurn reads the session a turn of userID begins in, in one round trip, with what
// would stop the turn. Errors, in this order: ErrNotFound (no such session, or another
// user's); *DuplicateRequestError when clientRequestID is set and an earlier user message
// of the same user has it, in any session; *GenerationRunningError when a generation runs
// in the session.
//
// A session this replica created for userID and nobody has had a turn in is answered from
// memory on PostgreSQL, without a round trip (freshSessions), unless clientRequestID is set
// (only the database knows the user's earlier requests).
func (s *Store) ReadTurn(ctx context.Context, sessionID, userID, clientRequestID string) (*TurnSession, error) {
	if guess, ok := s.fresh.take(sessionID, userID, time.Now()); ok && clientRequestID == "" { // whatever follows, not fresh
		return guess, nil
	}
	var row lockedSession
	err := s.getFixed(ctx, &row, s.lockQuery(false), clientRequestID, true, sessionID)
	ts, err := conflicts(&row, userID, err)
	if err == nil {
		s.fresh.read(ts)
	}
	return ts, err
}

// RepeatedRequest is ReadTurn's check for a turn that starts its own session, which has no
// session to read: a *DuplicateRequestError when an earlier user message of userID has
// clientRequestID (in any session), nil when none has. The write checks again, inside its
// transaction, for a repeat that races it.
func (s *Store) RepeatedRequest(ctx context.Context, userID, clientRequestID string) error {
	var earlier string
	err := s.getFixed(ctx, &earlier, `SELECT u.id || ' ' || COALESCE(a.id, '') || ' ' || u.session_id FROM messages u
		LEFT JOIN messages a ON a.reply_to = u.id AND a.role = 'assistant'
		WHERE u.user_id = ? AND u.role = 'user' AND u.client_request_id = ? AND u.client_request_id <> ''
		ORDER BY a.created_at DESC LIMIT 1`, userID, clientRequestID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("store: repeated request: %w", err)
	}
	ids := strings.SplitN(earlier, " ", 3) // always three: the query joins three ids
	return &DuplicateRequestError{UserMessageID: ids[0], AssistantMessageID: ids[1], SessionID: ids[2]}
}

// TurnWrite is what begins a turn besides its two messages.
type TurnWrite struct {
	// Lease is the claim of the replica that will run the generation.
	Lease Lease
	// Events are the first events of the assistant message's log (status queued).
	Events []Event
	// Read is the session as ReadTurn found it; the turn is written only if the session
	// is still so. Nil with NewSession.
	Read *TurnSession
	// Metadata, when set, is the session's new metadata, written with the turn.
	Metadata JSON
	// NewSession, instead of Read, is a session the turn creates: it is inserted in the
	// same transaction, and only if the turn is no repeat of an earlier client_request_id,
	// so a repeated post leaves nothing behind. The user message's SessionID must be its id.
	NewSession *Session
}

// WriteTurn writes a turn's two messages (the assistant's claimed by w.Lease) and the first
// events of its log, atomically, so a turn never exists half and its log never starts
// late; and the session's new metadata. It fills what prepareTurn describes. A turn in an
// existing session is written only if the session is still as w.Read says
// (ErrSessionChanged otherwise: read again); the partial unique indexes (one running
// generation per session, one client_request_id per session) are the last line, and their
// violations map to ErrSessionChanged too, so the caller's next read names the conflict. A
// new session's turn also meets *DuplicateRequestError.
func (s *Store) WriteTurn(ctx context.Context, user, assistant *Message, w TurnWrite) error {
	if err := prepareTurn(user, assistant); err != nil {
		return err
	}
	for i := range w.Events {
		if w.Events[i].MessageID != assistant.ID {
			return errors.New("store: write turn: a first event belongs to another message")
		}
	}
	stampEvents(w.Events)
	if n := len(w.Events); n > 0 {
		assistant.LastEventID = w.Events[n-1].Seq
	}
	var err error
	switch {
	case w.NewSession != nil:
		err = s.writeNewSessionTurn(ctx, user, assistant, w)
	case w.Read == nil:
		return errors.New("store: write turn: neither the session as read nor a new session")
	case s.isPostgres():
		err = s.writeTurnPG(ctx, user, assistant, w)
	default:
		err = s.writeTurnTx(ctx, user, assistant, w)
	}
	if idx, unique := uniqueViolation(err); unique && (idx == idxOneRunning || idx == idxClientRequestID) {
		return ErrSessionChanged
	}
	return err
}

// writeTurnPG is a PostgreSQL turn in an existing session: one prepared statement
// (writeTurnPGQuery) whose session update is the check, so the turn costs its read and this
// one round trip, and no row lock.
func (s *Store) writeTurnPG(ctx context.Context, user, assistant *Message, w TurnWrite) error {
	args, err := writeTurnArgs(user, assistant, w)
	if err != nil {
		return err
	}
	query := writeTurnPGQuery
	if w.Read.guessed {
		query, args = writeGuessedPGQuery, append(args, w.Read.Prompts)
	}
	st, err := s.prepared(ctx, query)
	if err != nil {
		return fmt.Errorf("store: write turn: prepare: %w", err)
	}
	var written int
	if err := st.QueryRowContext(ctx, args...).Scan(&written); err != nil {
		return fmt.Errorf("store: write turn: %w", err)
	}
	if written == 0 {
		return ErrSessionChanged
	}
	return nil
}

// writeTurnTx is a SQLite turn in an existing session: the session's conditional update
// (the check), then the rows, in one transaction on the one writer connection.
func (s *Store) writeTurnTx(ctx context.Context, user, assistant *Message, w TurnWrite) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: write turn: %w", err)
	}
	defer tx.Rollback()
	meta, updated := w.Read.Metadata, w.Read.UpdatedAt
	if w.Metadata != nil {
		meta, updated = w.Metadata, now()
	}
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET metadata = ?, updated_at = ? WHERE id = ? AND updated_at = ? AND metadata = ?`,
		emptyObject(meta), updated, w.Read.ID, w.Read.UpdatedAt, emptyObject(w.Read.Metadata))
	if err != nil {
		return fmt.Errorf("store: write turn: session: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmpErr(err, ErrSessionChanged)
	}
	if err := s.insertTurnRows(ctx, tx, user, assistant, w); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: write turn: commit: %w", err)
	}
	return nil
}

// writeNewSessionTurn inserts the session and the turn in one transaction; the session's
// read inside it names a repeated client_request_id, and the transaction then leaves
// nothing behind.
func (s *Store) writeNewSessionTurn(ctx context.Context, user, assistant *Message, w TurnWrite) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: write turn: %w", err)
	}
	defer tx.Rollback()
	sess := w.NewSession
	if w.Metadata != nil {
		sess.Metadata = w.Metadata
	}
	if err := s.insertSession(ctx, tx, sess); err != nil {
		return fmt.Errorf("store: write turn: %w", err)
	}
	var row lockedSession
	err = tx.GetContext(ctx, &row, s.lockQuery(true), user.ClientRequestID, true, sess.ID)
	if _, err := conflicts(&row, user.UserID, err); err != nil {
		return err
	}
	if err := s.insertTurnRows(ctx, tx, user, assistant, w); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: write turn: commit: %w", err)
	}
	return nil
}

// insertTurnRows inserts the two messages and the first events in tx.
func (s *Store) insertTurnRows(ctx context.Context, tx *sqlx.Tx, user, assistant *Message, w TurnWrite) error {
	if err := s.insertMessage(ctx, tx, user, Lease{}); err != nil {
		return fmt.Errorf("store: write turn: user message: %w", err)
	}
	if err := s.insertMessage(ctx, tx, assistant, w.Lease); err != nil {
		return fmt.Errorf("store: write turn: assistant message: %w", err)
	}
	if err := s.insertEvents(ctx, tx, w.Events); err != nil {
		return fmt.Errorf("store: write turn: events: %w", err)
	}
	return nil
}

// cmpErr is err, or def when err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// lockQuery is the begin's read: the session with its conflicts and what the plan's reads
// would find (Seen), locked for the turn when lock is set (a new session's transaction on
// PostgreSQL).
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
func conflicts(row *lockedSession, userID string, err error) (*TurnSession, error) {
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && row.UserID != userID:
		return nil, ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("store: read turn: %w", err)
	case row.Duplicate != "":
		ids := strings.SplitN(row.Duplicate, " ", 3) // always three: the query joins three ids
		return nil, &DuplicateRequestError{UserMessageID: ids[0], AssistantMessageID: ids[1], SessionID: ids[2]}
	case row.Running != "":
		return nil, &GenerationRunningError{MessageID: row.Running}
	}
	row.Session.utc()
	return &row.TurnSession, nil
}

// writeTurnPGQuery is a turn's write on PostgreSQL, fixed so that it is prepared once per
// connection and planned once. Its session update is the check: it matches only while the
// session's updated_at ($55) and metadata ($56) are as read, and writes the new metadata
// when $54; the user's message (no lease), the assistant's (claimed for $45 seconds, none
// when 0) and the first events (arrays) are inserted only if it matched. It returns how
// many sessions matched: 1, or 0 when the session changed (or went) since the read.
const writeTurnPGQuery = writeTurnSession + `WHERE id = $53 AND updated_at = $55::timestamptz AND metadata = $56
	RETURNING id
` + writeTurnRest

// writeGuessedPGQuery is writeTurnPGQuery for a session nobody read (freshSessions): its
// session update also checks what the read would have found and the guess assumed (a
// session without turns: no message, no strategy, and whether its locale has a stored
// prompt active, $57), so a guess the database does not confirm writes nothing. That the
// session is the user's, freshSessions.take checked: this replica created it for them, and
// a session's user never changes. (A condition on user_id here let PostgreSQL reach the
// session through the user's sessions index in a generic plan made on a table without
// statistics, and keep that plan for the connection's life: TestKeyedReadsUseTheKey.)
const writeGuessedPGQuery = writeTurnSession + `WHERE id = $53 AND updated_at = $55::timestamptz AND metadata = $56
		AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = $53)
		AND NOT EXISTS (SELECT 1 FROM strategies x WHERE x.session_id = $53 AND x.user_id = $3)
		AND EXISTS (SELECT 1 FROM prompts p WHERE p.locale = sessions.locale AND p.active) = $57::bool
	RETURNING id
` + writeTurnRest

// writeTurnSession and writeTurnRest are writeTurnPGQuery and writeGuessedPGQuery but for
// the condition of the session update.
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

// writeTurnArgs lays a turn's write out as writeTurnPGQuery's parameters.
func writeTurnArgs(user, assistant *Message, w TurnWrite) ([]any, error) {
	user.Owner, assistant.Owner = "", w.Lease.Owner
	args := make([]any, 0, 56)
	for _, m := range []*Message{user, assistant} {
		args = append(args, m.ID, m.SessionID, m.UserID, m.Role, m.Status, m.Content, m.Phase, m.RequestID,
			m.ClientRequestID, nullString(m.ReplyTo), m.ResponseID, m.ToolCalls, m.GenUI,
			m.StatePatch, m.Validation, m.Usage, m.Error, m.Metadata, m.LastEventID, m.CreatedAt,
			dbTimePtr(m.CompletedAt), m.Owner)
	}
	args = append(args, max(w.Lease.TTL.Seconds(), 0))
	evArgs, err := runArrays(w.Events)
	if err != nil {
		return nil, err
	}
	args = append(args, evArgs...)
	changed := w.Metadata != nil
	meta := w.Read.Metadata
	if changed {
		meta = w.Metadata
	}
	args = append(args, emptyObject(meta), now(), w.Read.ID, changed, w.Read.UpdatedAt, emptyObject(w.Read.Metadata))
	return args, nil
}

// prefixed qualifies every column of a select list with prefix ("s.").
func prefixed(prefix, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// createTurnAttempts bounds CreateTurn's reads after a lost race.
const createTurnAttempts = 3

// CreateTurn is a turn begun without changing its session: ReadTurn, then WriteTurn with
// start's lease and events, read again after a lost race (the next read names the conflict,
// or finds it gone). With start.NewSession the session is created in the same transaction
// (user.SessionID must name it). Errors as ReadTurn's and WriteTurn's.
func (s *Store) CreateTurn(ctx context.Context, user, assistant *Message, start TurnStart) error {
	w := TurnWrite{Lease: start.Lease, Events: start.Events, NewSession: start.NewSession}
	for attempt := 1; ; attempt++ {
		if w.NewSession == nil {
			read, err := s.ReadTurn(ctx, user.SessionID, user.UserID, user.ClientRequestID)
			if err != nil {
				return err
			}
			w.Read = read
			user.Phase, assistant.Phase = cmpOr(user.Phase, read.Phase), cmpOr(assistant.Phase, read.Phase)
		}
		err := s.WriteTurn(ctx, user, assistant, w)
		if !errors.Is(err, ErrSessionChanged) || attempt == createTurnAttempts {
			return err
		}
	}
}
