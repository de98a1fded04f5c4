package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// healthz answers as long as the process serves HTTP.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only while the database answers, so a load balancer stops routing to
// a replica that cannot persist turns.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		return &HTTPError{Status: http.StatusServiceUnavailable, Code: "not_ready", Message: "database unreachable", Err: err}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
