package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/store"
)

// listTransitions serves GET /api/v1/sessions/{id}/transitions: every phase move, oldest
// first, with its reason and evidence, a page at a time.
func (s *Server) listTransitions(c echo.Context) error {
	limit, after, err := pageParams(c, "transitions")
	if err != nil {
		return err
	}
	rows, err := s.store.ListTransitionsPage(c.Request().Context(), c.Param("id"), mustClaims(c).Subject, after.timeKey(), limit+1)
	if err != nil {
		return err
	}
	list, next := trimPage(rows, limit, func(x store.Transition) cursor { return cursor{List: "transitions", Time: x.CreatedAt, ID: x.ID} })
	return c.JSON(http.StatusOK, map[string]any{"transitions": list, "next_cursor": next})
}

// movePhase serves POST /api/v1/sessions/{id}/phase {"to", "reason"}: 200 with the session
// after the move, 422 when the graph forbids it, 409 while a generation runs.
func (s *Server) movePhase(c echo.Context) error {
	var body struct {
		To     string `json:"to"`
		Reason string `json:"reason"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.To == "" {
		return badRequest(`"to" is required`)
	}
	sess, err := s.orch.MovePhase(c.Request().Context(), mustClaims(c).Subject, c.Param("id"), body.To, body.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sess)
}
