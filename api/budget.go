package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// withinBudget refuses new work (a message, a skill run or job) from a user whose model
// calls for the day are used (429 budget_exhausted until the next UTC day).
func (s *Server) withinBudget() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if s.budget == nil {
				return next(c)
			}
			if err := s.budget.Allow(c.Request().Context(), mustClaims(c).Subject); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// getUsage serves GET /api/v1/me/usage: the caller's model calls and tokens today (UTC),
// with the day's budget (0: none) and when it resets.
func (s *Server) getUsage(c echo.Context) error {
	if s.budget == nil {
		return c.JSON(http.StatusOK, map[string]any{"calls": 0, "input_tokens": 0, "output_tokens": 0, "budget": 0})
	}
	u, err := s.budget.Usage(c.Request().Context(), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}
