package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/jsonskill/terminal"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// The watcher's routes (docs/json-skills.md, answering from the phone): a watcher records
// each question it notifies and gets the links that answer it; it follows the answers of
// its user's questions and reports what became of each, typed into the pane that asked
// (delivered) or not, the screen having moved on (stale). The answer page is answers.go.

// questionStore is what the watcher's routes and the answer page need.
type questionStore interface {
	RecordQuestion(ctx context.Context, q *store.Question) (*store.Question, bool, error)
	GetQuestion(ctx context.Context, id, userID string) (*store.Question, error)
	AnswerQuestion(ctx context.Context, id, userID, answer string, keys store.JSON) (*store.Question, error)
	EndQuestion(ctx context.Context, id, userID, state string) (*store.Question, error)
	AnsweredQuestions(ctx context.Context, userID string) ([]store.Question, int64, error)
}

// answerPoll is how often an answers stream looks for new answers; an answer reaches the
// watcher within it.
const answerPoll = 250 * time.Millisecond

// maxActions is how many options a notification's actions offer (ntfy shows three).
const maxActions = 3

// questionBody is a question as a watcher records it.
type questionBody struct {
	SourceID    string           `json:"source_id"`
	Workspace   string           `json:"workspace"`
	Agent       string           `json:"agent"`
	Fingerprint string           `json:"fingerprint"`
	Kind        string           `json:"message_type"`
	Message     string           `json:"message"`
	Subject     string           `json:"subject"`
	Options     []questionOption `json:"options"`
	Locale      string           `json:"locale"`
}

// questionOption is one option of a question: its label and the keys the rules read for
// it on the agent's screen (none when the model read the screen).
type questionOption struct {
	Label string   `json:"label"`
	Keys  []string `json:"keys,omitempty"`
}

// recordedQuestion is the answer to a recorded question: the question, whether it is new
// (only a new one is notified), and its links.
type recordedQuestion struct {
	Question  *store.Question `json:"question"`
	New       bool            `json:"new"`
	AnswerURL string          `json:"answer_url"`
	Actions   []answerAction  `json:"actions"`
}

// answerAction is one option answered straight from a notification: POST its URL.
type answerAction struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// check says what is wrong with a recorded question.
func (q *questionBody) check() error {
	for name, v := range map[string]string{"source_id": q.SourceID, "fingerprint": q.Fingerprint, "message": q.Message} {
		if strings.TrimSpace(v) == "" {
			return badRequest(fmt.Sprintf("%q is required", name))
		}
	}
	for name, v := range map[string]string{"source_id": q.SourceID, "workspace": q.Workspace, "fingerprint": q.Fingerprint,
		"agent": q.Agent, "message_type": q.Kind, "subject": q.Subject} {
		if len(v) > 1000 {
			return badRequest(fmt.Sprintf("%q: at most 1000 bytes", name))
		}
	}
	if utf8.RuneCountInString(q.Message) > 4000 || len(q.Options) > 20 {
		return badRequest(`"message" holds at most 4000 characters and "options" at most 20`)
	}
	if err := checkLocale(q.Locale); err != nil {
		return err
	}
	for _, o := range q.Options {
		if strings.TrimSpace(o.Label) == "" || utf8.RuneCountInString(o.Label) > 200 || len(o.Keys) > 8 {
			return badRequest("each option needs a label of at most 200 characters and at most 8 keys")
		}
	}
	return nil
}

// recordQuestion serves POST /api/v1/watch/questions: 201 with the links for a new
// question, 200 with the live one when the source already has it open or answered.
func (s *Server) recordQuestion(c echo.Context) error {
	var body questionBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := body.check(); err != nil {
		return err
	}
	if body.Locale == "" {
		body.Locale = "en"
	}
	options, err := json.Marshal(body.Options)
	if err != nil {
		return err
	}
	user := mustClaims(c).Subject
	q, isNew, err := s.store.RecordQuestion(c.Request().Context(), &store.Question{UserID: user, SourceID: body.SourceID,
		Fingerprint: body.Fingerprint, Workspace: body.Workspace, Agent: body.Agent, Kind: body.Kind, Message: body.Message,
		Subject: body.Subject, Options: options, Locale: body.Locale, ExpiresAt: time.Now().Add(s.cfg.AnswerTTL)})
	if err != nil {
		return err
	}
	token, err := s.auth.SignAnswer(user, q.ID, time.Until(q.ExpiresAt))
	if err != nil {
		return err
	}
	page := s.publicURL(c) + "/answer/" + token
	rec := recordedQuestion{Question: q, New: isNew, AnswerURL: page}
	for i, o := range body.Options {
		if i == maxActions {
			break
		}
		rec.Actions = append(rec.Actions, answerAction{Label: o.Label, URL: fmt.Sprintf("%s?option=%d", page, i)})
	}
	status := http.StatusOK
	if isNew {
		status = http.StatusCreated
		s.metrics.QuestionEvent("notified")
		s.logger.Info("question recorded", "question_id", q.ID, "source_id", q.SourceID, "user_id", user)
	}
	return c.JSON(status, rec)
}

// publicURL is where phones reach this server: the configured URL, else the address the
// caller reached it at.
func (s *Server) publicURL(c echo.Context) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	return c.Scheme() + "://" + c.Request().Host
}

// outcomeBody is a watcher's report of an answer.
type outcomeBody struct {
	State string `json:"state"`
}

// questionOutcome serves POST /api/v1/watch/questions/{id}/outcome: delivered (the answer
// was typed into the pane that asked) or stale (the screen moved on first; also a question
// the person answered at the computer). 409 question_closed when the question is past that.
func (s *Server) questionOutcome(c echo.Context) error {
	var body outcomeBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.State != store.QuestionDelivered && body.State != store.QuestionStale {
		return badRequest(`"state" must be "delivered" or "stale"`)
	}
	user := mustClaims(c).Subject
	q, err := s.store.EndQuestion(c.Request().Context(), c.Param("id"), user, body.State)
	if errors.Is(err, store.ErrQuestionClosed) {
		return &HTTPError{Status: http.StatusConflict, Code: "question_closed",
			Message: "the question is " + q.State + ": its outcome is known", Extra: map[string]any{"state": q.State}}
	}
	if err != nil {
		return err
	}
	s.metrics.QuestionEvent(q.State)
	if q.State == store.QuestionDelivered && q.AnsweredAt != nil && q.EndedAt != nil {
		s.metrics.AnswerDelivered(q.EndedAt.Sub(*q.AnsweredAt))
	}
	s.logger.Info("question "+q.State, "question_id", q.ID, "source_id", q.SourceID, "user_id", user)
	return c.JSON(http.StatusOK, q)
}

// answerEvent is an answer as the answers stream sends it.
type answerEvent struct {
	ID          string         `json:"id"`
	SourceID    string         `json:"source_id"`
	Fingerprint string         `json:"fingerprint"`
	Answer      string         `json:"answer"`
	Keys        []terminal.Key `json:"keys"`
	AnsweredAt  *time.Time     `json:"answered_at"`
}

// followAnswers serves GET /api/v1/watch/answers: the caller's answered questions not yet
// delivered, oldest first, then each new one, as "answer" events, with heartbeats, until
// the client leaves. A watcher that reconnects gets every answer it has not reported on
// again, so an answer given while its computer slept arrives when it wakes, unless it
// expired; the watcher knows the ones it is typing.
func (s *Server) followAnswers(c echo.Context) error {
	user := mustClaims(c).Subject
	release, err := s.slots.take(c, user)
	if err != nil {
		return err
	}
	defer release()
	w, err := startSSE(c.Response(), c.Request().ProtoMajor, &s.frames)
	if err != nil {
		return nil // the client is already gone
	}
	ctx := c.Request().Context()
	poll := time.NewTicker(answerPoll)
	defer poll.Stop()
	beat := time.NewTicker(s.cfg.HeartbeatInterval)
	defer beat.Stop()
	sent := map[string]bool{}
	for {
		if err := s.sendAnswers(ctx, w, user, sent); err != nil {
			return nil // the client left, or the database is away: the watcher reconnects
		}
		select {
		case <-poll.C:
		case <-beat.C:
			if w.unlogged(events.Heartbeat, map[string]any{"ts": time.Now().UnixMilli()}) != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		case <-s.streamsCtx.Done():
			return nil
		}
	}
}

// sendAnswers sends the answered questions not sent on this stream yet.
func (s *Server) sendAnswers(ctx context.Context, w *sseWriter, user string, sent map[string]bool) error {
	qs, expired, err := s.store.AnsweredQuestions(ctx, user)
	if err != nil {
		return err
	}
	for range expired {
		s.metrics.QuestionEvent(store.QuestionExpired)
	}
	live := make(map[string]bool, len(qs))
	for _, q := range qs {
		live[q.ID] = true
		if sent[q.ID] {
			continue
		}
		var keys []terminal.Key
		if err := json.Unmarshal(q.AnswerKeys, &keys); err != nil {
			return fmt.Errorf("api: answer keys of %s: %w", q.ID, err)
		}
		if err := w.unlogged(events.Answer, answerEvent{ID: q.ID, SourceID: q.SourceID, Fingerprint: q.Fingerprint,
			Answer: q.Answer, Keys: keys, AnsweredAt: q.AnsweredAt}); err != nil {
			return err
		}
		sent[q.ID] = true
	}
	for id := range sent { // what was reported on leaves the set: it stays bounded
		if !live[id] {
			delete(sent, id)
		}
	}
	return nil
}
