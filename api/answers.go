package api

import (
	_ "embed"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/jsonskill/terminal"
	"github.com/phaseflow/phaseflow/store"
)

// The answer page: what a notification of a watched agent's question links to. Its token
// is the only credential, bound to one question and one answer (auth.SignAnswer); it works
// without JavaScript (plain forms) and on a phone. A POST from a browser goes back to the
// page (303), which then says what became of the answer; any other client (a
// notification's action) gets JSON.

//go:embed answer_page.html
var answerPageHTML string

//go:embed answer_page.css
var answerPageCSS []byte

// answerRateKey keeps answers' allowance apart from messages' in the shared rate store.
const answerRateKey = "answer:"

// answerTexts are the page's words in each locale.
type answerTexts struct {
	Title, YourAnswer, Send, Refresh        string
	Answered, Delivered, Stale, Expired     string
	Used, ChooseOne, Agent, TooMany, Unread string
}

func answerTextsFor(locale string) answerTexts {
	if locale == "zh" {
		return answerTexts{Title: "回复你的编程代理", YourAnswer: "你的回复", Send: "发送", Refresh: "刷新",
			Answered: "已发送。电脑在线时，它会被输入到提问的终端里。", Delivered: "已输入到提问的终端。",
			Stale:   "在你的回复输入之前，屏幕已经变了（也许你已在电脑上回复）：没有输入任何内容。",
			Expired: "这个问题已过期。", Used: "这个问题已经回复过了。", ChooseOne: "请选择一个选项，或写下你的回复。",
			Agent: "代理", TooMany: "回复太频繁，请稍后再试。", Unread: "这个链接无效或已过期。"}
	}
	return answerTexts{Title: "Answer your coding agent", YourAnswer: "Your answer", Send: "Send", Refresh: "Refresh",
		Answered:  "Sent. It will be typed into the terminal that asked as soon as your computer is online.",
		Delivered: "Typed into the terminal that asked.",
		Stale:     "The screen moved on before your answer could be typed (perhaps you answered at the computer): nothing was typed.",
		Expired:   "This question has expired.", Used: "This question was already answered.",
		ChooseOne: "Choose an option, or write your answer.", Agent: "The agent",
		TooMany: "Too many answers; try again in a moment.", Unread: "This link is not valid or has expired."}
}

// answerView is what the page shows.
type answerView struct {
	Locale, Who, Notice, StateText string
	Question                       string // the message's first line: the question itself
	Q                              *store.Question
	T                              answerTexts
	Open, FreeText, Waiting        bool
	Options                        []answerOptionView
	MaxText                        int
}

type answerOptionView struct {
	Index int
	Label string
}

// serveAnswerCSS serves GET /answer-page.css.
func serveAnswerCSS(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", answerPageCSS)
}

// showAnswer serves GET /answer/{token}: the question, with its options and a text field
// while it is open, else what became of it.
func (s *Server) showAnswer(c echo.Context) error {
	q, err := s.tokenQuestion(c)
	if err != nil {
		return err
	}
	return s.renderAnswer(c, http.StatusOK, q, "")
}

// answerQuestion serves POST /answer/{token}: option (its index, in the form or the query)
// or text. A second answer is 410 answer_used, an expired question 410 question_expired, a
// stale one 409 question_stale.
func (s *Server) answerQuestion(c echo.Context) error {
	q, err := s.tokenQuestion(c)
	if err != nil {
		return err
	}
	if s.answerRate != nil {
		ok, retry, _ := s.answerRate.Allow(c.Request().Context(), answerRateKey+q.UserID)
		if !ok {
			return s.refuseAnswer(c, q, tooManyMessages(retry), answerTextsFor(q.Locale).TooMany)
		}
	}
	answer, keys, err := chosenAnswer(c, q)
	if err != nil {
		return s.refuseAnswer(c, q, err, answerTextsFor(q.Locale).ChooseOne)
	}
	encoded, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	got, err := s.store.AnswerQuestion(c.Request().Context(), q.ID, q.UserID, answer, encoded)
	if errors.Is(err, store.ErrQuestionClosed) {
		return s.closedAnswer(c, got)
	}
	if err != nil {
		return err
	}
	s.metrics.QuestionEvent(store.QuestionAnswered)
	s.logger.Info("question answered", "question_id", got.ID, "source_id", got.SourceID, "user_id", got.UserID)
	if wantsHTML(c) {
		return c.Redirect(http.StatusSeeOther, c.Request().URL.Path)
	}
	return c.JSON(http.StatusOK, map[string]string{"question_id": got.ID, "state": got.State})
}

// tokenQuestion is the question the path's answer token answers: 401 for a token that is
// forged or expired, 404 for a question that is not the token's user's.
func (s *Server) tokenQuestion(c echo.Context) (*store.Question, error) {
	claims, err := s.auth.VerifyAnswer(c.Param("token"))
	if err != nil {
		if auth.IsExpired(err) {
			return nil, &HTTPError{Status: http.StatusGone, Code: "question_expired", Message: "this question has expired", Err: err}
		}
		return nil, &HTTPError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "this answer link is not valid", Err: err}
	}
	return s.store.GetQuestion(c.Request().Context(), claims.QuestionID, claims.Subject)
}

// chosenAnswer reads the answer a form or an action sends: the label and keys of the
// option chosen, or the text written (then Enter).
func chosenAnswer(c echo.Context, q *store.Question) (string, []terminal.Key, error) {
	var options []questionOption
	if err := json.Unmarshal(q.Options, &options); err != nil {
		return "", nil, err
	}
	if v := c.FormValue("option"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= len(options) {
			return "", nil, badRequest(`"option" is not one of the question's options`)
		}
		return options[n].Label, terminal.OptionKeys(options[n].Keys, n), nil
	}
	text := terminal.CleanText(c.FormValue("text"))
	if text == "" {
		return "", nil, badRequest(`send "option" (an option's index) or "text"`)
	}
	return text, terminal.TextKeys(text), nil
}

// closedAnswer answers a post on a question that is past answering.
func (s *Server) closedAnswer(c echo.Context, q *store.Question) error {
	t := answerTextsFor(q.Locale)
	switch q.State {
	case store.QuestionStale:
		return s.refuseAnswer(c, q, &HTTPError{Status: http.StatusConflict, Code: "question_stale", Message: "the screen moved on; nothing was typed"}, t.Stale)
	case store.QuestionExpired:
		return s.refuseAnswer(c, q, &HTTPError{Status: http.StatusGone, Code: "question_expired", Message: "this question has expired"}, t.Expired)
	}
	return s.refuseAnswer(c, q, &HTTPError{Status: http.StatusGone, Code: "answer_used", Message: "this question was already answered"}, t.Used)
}

// refuseAnswer answers err: as the page with notice for a browser, as the API's error to
// anything else.
func (s *Server) refuseAnswer(c echo.Context, q *store.Question, err error, notice string) error {
	if !wantsHTML(c) {
		return err
	}
	return s.renderAnswer(c, toHTTP(err).Status, q, notice)
}

// renderAnswer writes the page for q with status.
func (s *Server) renderAnswer(c echo.Context, status int, q *store.Question, notice string) error {
	t := answerTextsFor(q.Locale)
	v := answerView{Locale: q.Locale, Q: q, T: t, Notice: notice, Open: q.State == store.QuestionOpen,
		Waiting: q.State == store.QuestionAnswered, MaxText: terminal.MaxAnswerText}
	v.Question, _, _ = strings.Cut(q.Message, "\n")
	v.Who = terminal.Agent(q.Agent).DisplayName()
	if v.Who == "" {
		v.Who = t.Agent
	}
	v.StateText = map[string]string{store.QuestionAnswered: t.Answered, store.QuestionDelivered: t.Delivered,
		store.QuestionStale: t.Stale, store.QuestionExpired: t.Expired}[q.State]
	var options []questionOption
	if err := json.Unmarshal(q.Options, &options); err != nil {
		return err
	}
	for i, o := range options {
		v.Options = append(v.Options, answerOptionView{Index: i, Label: o.Label})
	}
	v.FreeText = len(options) == 0 || q.Kind == "open_ended"
	var b strings.Builder
	if err := s.answerPage.Execute(&b, v); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTML(status, b.String())
}

// wantsHTML reports a browser: a request that accepts HTML.
func wantsHTML(c echo.Context) bool {
	return strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/html")
}
