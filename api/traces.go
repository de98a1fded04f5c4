package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/store"
)

// traceAttempt is one attempt of a message's trace: the requests it sent upstream.
type traceAttempt struct {
	Attempt  int           `json:"attempt"`
	Requests []store.Trace `json:"requests"`
}

// getTrace serves GET /api/v1/messages/{id}/trace: the redacted requests Phaseflow sent
// upstream for the message, by attempt. The message's owner reads it; an admin reads any
// message's (404 for anyone else, so ids do not leak).
func (s *Server) getTrace(c echo.Context) error {
	claims := mustClaims(c)
	id := c.Param("id")
	traces, err := s.store.ListTraces(c.Request().Context(), id, claims.Subject, claims.IsAdmin())
	if err != nil {
		return err
	}
	attempts := []traceAttempt{}
	for _, t := range traces {
		if n := len(attempts); n == 0 || attempts[n-1].Attempt != t.Attempt {
			attempts = append(attempts, traceAttempt{Attempt: t.Attempt})
		}
		last := &attempts[len(attempts)-1]
		last.Requests = append(last.Requests, t)
	}
	return c.JSON(http.StatusOK, map[string]any{"message_id": id, "attempts": attempts})
}
