package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/store"
)

// getEvents serves GET /api/v1/messages/{id}/events: the message's log after Last-Event-ID,
// then the live tail, until the terminal event.
func (s *Server) getEvents(c echo.Context) error {
	claims := mustClaims(c)
	after, err := lastEventID(c)
	if err != nil {
		return err
	}
	msg, err := s.store.GetMessage(c.Request().Context(), c.Param("id"), claims.Subject)
	if err != nil {
		return err
	}
	if msg.Role != store.RoleAssistant {
		return &HTTPError{Status: http.StatusNotFound, Code: "not_found", Message: "this message has no event stream"}
	}
	if isFinished(msg) && after >= msg.LastEventID {
		return c.NoContent(http.StatusNoContent) // tells EventSource to stop reconnecting
	}
	release, err := s.slots.take(c, claims.Subject)
	if err != nil {
		return err
	}
	return s.stream(c, msg, after, true, nil, release)
}

// lastEventID reads the client's resume point from the header or the query.
func lastEventID(c echo.Context) (int64, error) {
	v := c.Request().Header.Get("Last-Event-ID")
	if v == "" {
		v = c.QueryParam("last_event_id")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("Last-Event-ID must be a non-negative integer")
	}
	return n, nil
}

func isFinished(m *store.Message) bool {
	switch m.Status {
	case store.StatusPending, store.StatusStreaming:
		return false
	}
	return true
}
