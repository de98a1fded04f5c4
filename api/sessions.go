package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/store"
)

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
	locale := body.Locale
	if locale == "" {
		locale = c.Request().Header.Get("Accept-Language")
	}
	sess, err := s.sessions.CreateSession(c.Request().Context(), mustClaims(c).Subject, body.Title, locale)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, sess)
}

func (s *Server) listSessions(c echo.Context) error {
	list, err := s.store.ListSessions(c.Request().Context(), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	if list == nil {
		list = []store.Session{}
	}
	return c.JSON(http.StatusOK, map[string]any{"sessions": list})
}

func (s *Server) getSession(c echo.Context) error {
	sess, err := s.store.GetSession(c.Request().Context(), c.Param("id"), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sess)
}

func (s *Server) listMessages(c echo.Context) error {
	list, err := s.store.ListMessages(c.Request().Context(), c.Param("id"), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	if list == nil {
		list = []store.Message{}
	}
	return c.JSON(http.StatusOK, map[string]any{"messages": list})
}

func (s *Server) getMessage(c echo.Context) error {
	msg, err := s.store.GetMessage(c.Request().Context(), c.Param("id"), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, msg)
}
