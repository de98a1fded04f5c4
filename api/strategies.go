package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func (s *Server) getStrategy(c echo.Context) error {
	st, err := s.store.GetStrategy(c.Request().Context(), c.Param("id"), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// confirmStrategy serves POST /api/v1/strategies/{id}/confirm {"advance_to_stress_test"}:
// the strategy is confirmed and, when asked, the session moves to stress_test as soon as
// the strategy phase's conditions hold (at once if they already do).
func (s *Server) confirmStrategy(c echo.Context) error {
	var body struct {
		Advance bool `json:"advance_to_stress_test"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	st, err := s.orch.ConfirmStrategy(c.Request().Context(), mustClaims(c).Subject, c.Param("id"), body.Advance)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}
