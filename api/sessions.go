package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/store"
)

// chatStore is what the chat routes read: sessions, messages and their traces, the phase
// moves and strategies.
type chatStore interface {
	GetSession(ctx context.Context, id, userID string) (*store.Session, error)
	ListSessionsPage(ctx context.Context, userID string, after *store.TimeKey, limit int) ([]store.Session, error)
	GetMessage(ctx context.Context, id, userID string) (*store.Message, error)
	RunningMessage(ctx context.Context, sessionID, userID string) (*store.Message, error)
	ListMessages(ctx context.Context, sessionID, userID string) ([]store.Message, error)
	ListTraces(ctx context.Context, messageID, userID string, anyUser bool) ([]store.Trace, error)
	ListMessagesPage(ctx context.Context, sessionID, userID string, after *store.TimeKey, limit int) ([]store.Message, error)
	ListTransitionsPage(ctx context.Context, sessionID, userID string, after *store.TimeKey, limit int) ([]store.Transition, error)
	GetStrategy(ctx context.Context, id, userID string) (*store.Strategy, error)
}

type createSessionBody struct {
	Title  string `json:"title"`
	Locale string `json:"locale"`
}

// createSession serves POST /api/v1/sessions. The locale comes from the body or, failing
// that, from Accept-Language.
func (s *Server) createSession(c echo.Context) error {
	var body createSessionBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := checkLocale(body.Locale); err != nil {
		return err
	}
	locale := body.Locale
	if locale == "" {
		locale = c.Request().Header.Get("Accept-Language")
	}
	sess, err := s.orch.CreateSession(c.Request().Context(), mustClaims(c).Subject, body.Title, locale)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, sess)
}

// listSessions serves GET /api/v1/sessions: the caller's sessions, newest first, a page at a
// time.
func (s *Server) listSessions(c echo.Context) error {
	limit, after, err := pageParams(c, "sessions")
	if err != nil {
		return err
	}
	rows, err := s.store.ListSessionsPage(c.Request().Context(), mustClaims(c).Subject, after.timeKey(), limit+1)
	if err != nil {
		return err
	}
	list, next := trimPage(rows, limit, func(x store.Session) cursor { return cursor{List: "sessions", Time: x.CreatedAt, ID: x.ID} })
	return c.JSON(http.StatusOK, map[string]any{"sessions": list, "next_cursor": next})
}

// sessionView is a session as GET /sessions/{id} answers it: with the message being
// generated in it, so a page reloaded mid-reply knows what to follow.
type sessionView struct {
	*store.Session
	RunningMessageID *string `json:"running_message_id"`
}

// getSession serves GET /api/v1/sessions/{id}.
func (s *Server) getSession(c echo.Context) error {
	ctx, user := c.Request().Context(), mustClaims(c).Subject
	sess, err := s.store.GetSession(ctx, c.Param("id"), user)
	if err != nil {
		return err
	}
	view := sessionView{Session: sess}
	running, err := s.store.RunningMessage(ctx, sess.ID, user)
	switch {
	case err == nil:
		view.RunningMessageID = &running.ID
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	return c.JSON(http.StatusOK, view)
}

// listMessages serves GET /api/v1/sessions/{id}/messages: oldest first, a page at a time.
func (s *Server) listMessages(c echo.Context) error {
	limit, after, err := pageParams(c, "messages")
	if err != nil {
		return err
	}
	rows, err := s.store.ListMessagesPage(c.Request().Context(), c.Param("id"), mustClaims(c).Subject, after.timeKey(), limit+1)
	if err != nil {
		return err
	}
	list, next := trimPage(rows, limit, func(x store.Message) cursor { return cursor{List: "messages", Time: x.CreatedAt, ID: x.ID} })
	return c.JSON(http.StatusOK, map[string]any{"messages": list, "next_cursor": next})
}

func (s *Server) getMessage(c echo.Context) error {
	msg, err := s.store.GetMessage(c.Request().Context(), c.Param("id"), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, msg)
}
