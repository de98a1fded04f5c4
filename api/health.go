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

// codeNotReady is readiness's 503: logged once per change (readiness), not per probe.
const codeNotReady = "not_ready"

// readyz answers 200 only while the database answers, so a load balancer stops routing to
// a replica that cannot persist turns.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	err := s.store.Ping(ctx)
	s.readiness(err)
	if err != nil {
		return &HTTPError{Status: http.StatusServiceUnavailable, Code: codeNotReady, Message: "database unreachable", Err: err}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// readiness logs a change of readiness once: a load balancer probing every second must
// not fill the log while the database is down.
func (s *Server) readiness(err error) {
	state := int32(1)
	if err != nil {
		state = 2
	}
	if s.ready.Swap(state) == state {
		return
	}
	if err != nil {
		s.logger.Warn("not ready: the database does not answer", "err", err)
		return
	}
	s.logger.Info("ready: the database answers")
}

// Probe answers a health probe that arrives when the replica holds all the connections it
// may (see ConnLimits.Health): /healthz as its route does, /readyz after asking the
// database, so a flooded replica still reads as alive and ready.
func (s *Server) Probe(path string) (int, []byte) {
	if path == "/readyz" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := s.store.Ping(ctx); err != nil {
			return http.StatusServiceUnavailable, []byte(`{"error":{"code":"not_ready","message":"database unreachable"}}` + "\n")
		}
		return http.StatusOK, []byte(`{"status":"ready"}` + "\n")
	}
	return http.StatusOK, []byte(`{"status":"ok"}` + "\n")
}
