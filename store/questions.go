package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Question states: open until answered; answered until the watcher types the answer
// (delivered) or finds the screen moved on (stale); expired once its expiry passes open or
// answered.
const (
	QuestionOpen      = "open"
	QuestionAnswered  = "answered"
	QuestionDelivered = "delivered"
	QuestionStale     = "stale"
	QuestionExpired   = "expired"
)

// Question is a question a watcher notified: what the agent on a source asked, with its
// options (a JSON list of {label, keys}), and what became of it.
type Question struct {
	ID          string     `db:"id" json:"id"`
	UserID      string     `db:"user_id" json:"-"`
	SourceID    string     `db:"source_id" json:"source_id"`
	Fingerprint string     `db:"fingerprint" json:"fingerprint"`
	Workspace   string     `db:"workspace" json:"workspace"`
	Agent       string     `db:"agent" json:"agent"`
	Kind        string     `db:"kind" json:"message_type"`
	Message     string     `db:"message" json:"message"`
	Subject     string     `db:"subject" json:"subject"`
	Options     JSON       `db:"options" json:"options"`
	Locale      string     `db:"locale" json:"locale"`
	State       string     `db:"state" json:"state"`
	Answer      string     `db:"answer" json:"answer"`
	AnswerKeys  JSON       `db:"answer_keys" json:"keys"`
	CreatedAt   time.Time  `db:"created_at" json:"created_at"`
	ExpiresAt   time.Time  `db:"expires_at" json:"expires_at"`
	AnsweredAt  *time.Time `db:"answered_at" json:"answered_at"`
	EndedAt     *time.Time `db:"ended_at" json:"ended_at"`
}

const questionColumns = `id, user_id, source_id, fingerprint, workspace, agent, kind, message, subject, options,
	locale, state, answer, answer_keys, created_at, expires_at, answered_at, ended_at`

// ErrQuestionClosed is AnswerQuestion's and EndQuestion's answer when the question is not
// in a state that allows the change; the question returned with it says which it is in.
var ErrQuestionClosed = errors.New("store: the question is not open to that")

// RecordQuestion stores q, open, unless a question of its user and source with its
// fingerprint is open or answered: then that one, and false. Questions of that key past
// their expiry are expired first. It fills q's id and times.
func (s *Store) RecordQuestion(ctx context.Context, q *Question) (*Question, bool, error) {
	at := now()
	if _, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE questions SET state = ?, ended_at = ?
		WHERE user_id = ? AND source_id = ? AND fingerprint = ? AND state IN (?, ?) AND expires_at <= ?`),
		QuestionExpired, at, q.UserID, q.SourceID, q.Fingerprint, QuestionOpen, QuestionAnswered, at); err != nil {
		return nil, false, fmt.Errorf("store: record question: %w", err)
	}
	q.ID, q.State, q.CreatedAt, q.ExpiresAt = NewID(), QuestionOpen, at, dbTime(q.ExpiresAt)
	q.Options, q.AnswerKeys = emptyList(q.Options), emptyList(q.AnswerKeys)
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`INSERT INTO questions (`+questionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL) ON CONFLICT DO NOTHING`),
		q.ID, q.UserID, q.SourceID, q.Fingerprint, q.Workspace, q.Agent, q.Kind, q.Message, q.Subject, q.Options,
		q.Locale, q.State, q.Answer, q.AnswerKeys, q.CreatedAt, q.ExpiresAt)
	if err != nil {
		return nil, false, fmt.Errorf("store: record question: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return q, n == 1, wrapErr("store: record question", err)
	}
	var live Question
	err = s.db.GetContext(ctx, &live, s.db.Rebind(`SELECT `+questionColumns+` FROM questions
		WHERE user_id = ? AND source_id = ? AND fingerprint = ? AND state IN (?, ?)`),
		q.UserID, q.SourceID, q.Fingerprint, QuestionOpen, QuestionAnswered)
	if err != nil {
		return nil, false, fmt.Errorf("store: record question: the live one: %w", err)
	}
	live.utc()
	return &live, false, nil
}

// GetQuestion returns the question id if it is userID's, else ErrNotFound. A question past
// its expiry reads as expired.
func (s *Store) GetQuestion(ctx context.Context, id, userID string) (*Question, error) {
	var q Question
	err := s.db.GetContext(ctx, &q, s.db.Rebind(`SELECT `+questionColumns+` FROM questions WHERE id = ? AND user_id = ?`), id, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get question: %w", err)
	}
	q.utc()
	if (q.State == QuestionOpen || q.State == QuestionAnswered) && !q.ExpiresAt.After(time.Now()) {
		q.State = QuestionExpired
	}
	return &q, nil
}

// AnswerQuestion records answer and the keys that type it on an open question before its
// expiry. Any other question answers ErrQuestionClosed with the question as it is.
func (s *Store) AnswerQuestion(ctx context.Context, id, userID, answer string, keys JSON) (*Question, error) {
	at := now()
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE questions SET state = ?, answer = ?, answer_keys = ?, answered_at = ?
		WHERE id = ? AND user_id = ? AND state = ? AND expires_at > ?`),
		QuestionAnswered, answer, emptyList(keys), at, id, userID, QuestionOpen, at)
	return s.changedQuestion(ctx, "answer question", res, err, id, userID)
}

// EndQuestion moves a question to state: delivered from answered, stale from open or
// answered. Any other move answers ErrQuestionClosed with the question as it is.
func (s *Store) EndQuestion(ctx context.Context, id, userID, state string) (*Question, error) {
	from := []any{QuestionAnswered, QuestionAnswered}
	if state == QuestionStale {
		from = []any{QuestionOpen, QuestionAnswered}
	} else if state != QuestionDelivered {
		return nil, fmt.Errorf("store: end question: %q is not an end", state)
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE questions SET state = ?, ended_at = ?
		WHERE id = ? AND user_id = ? AND state IN (?, ?)`), append([]any{state, now(), id, userID}, from...)...)
	return s.changedQuestion(ctx, "end question", res, err, id, userID)
}

// changedQuestion reads the question an update changed, or answers ErrQuestionClosed with
// it when the update changed nothing.
func (s *Store) changedQuestion(ctx context.Context, what string, res sql.Result, err error, id, userID string) (*Question, error) {
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	q, err := s.GetQuestion(ctx, id, userID)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return q, ErrQuestionClosed
	}
	return q, nil
}

// AnsweredQuestions are userID's questions answered and not yet delivered, oldest answer
// first, after expiring those past their expiry (how many, for the metrics).
func (s *Store) AnsweredQuestions(ctx context.Context, userID string) ([]Question, int64, error) {
	at := now()
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`UPDATE questions SET state = ?, ended_at = ?
		WHERE user_id = ? AND state IN (?, ?) AND expires_at <= ?`),
		QuestionExpired, at, userID, QuestionOpen, QuestionAnswered, at)
	if err != nil {
		return nil, 0, fmt.Errorf("store: answered questions: %w", err)
	}
	expired, err := res.RowsAffected()
	if err != nil {
		return nil, 0, fmt.Errorf("store: answered questions: %w", err)
	}
	var out []Question
	err = s.db.SelectContext(ctx, &out, s.db.Rebind(`SELECT `+questionColumns+` FROM questions
		WHERE user_id = ? AND state = ? ORDER BY answered_at, id`), userID, QuestionAnswered)
	if err != nil {
		return nil, 0, fmt.Errorf("store: answered questions: %w", err)
	}
	for i := range out {
		out[i].utc()
	}
	return out, expired, nil
}

// utc puts a scanned question's times in UTC.
func (q *Question) utc() {
	q.CreatedAt, q.ExpiresAt = q.CreatedAt.UTC(), q.ExpiresAt.UTC()
	for _, t := range []**time.Time{&q.AnsweredAt, &q.EndedAt} {
		if *t != nil {
			u := (**t).UTC()
			*t = &u
		}
	}
}

// emptyList is j, or an empty JSON list when j is empty.
func emptyList(j JSON) JSON {
	if len(j) == 0 {
		return JSON(`[]`)
	}
	return j
}

// wrapErr wraps a non-nil err with what failed.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
