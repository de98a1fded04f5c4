package api

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api/auth"
)

// Metrics is what the API reports to and serves at GET /metrics (package metrics).
type Metrics interface {
	RequestObserved(method, route string, status int, code string, d time.Duration)
	StreamOpened()
	StreamClosed()
	// StreamResumed says whether an opening stream came with Last-Event-ID, and how many
	// events it had not seen then.
	StreamResumed(resumed bool, behind int64)
	FollowerOpened()
	FollowerClosed()
	// QuestionEvent counts what happened to a watched agent's question.
	QuestionEvent(event string)
	// AnswerDelivered observes an answer's time from the phone to the pane.
	AnswerDelivered(d time.Duration)
	Handler() http.Handler
}

// metricsMiddleware reports every request with its route pattern, status and error code.
// It runs before routing, so it also sees the answers given there (405, 431, preflights);
// the pattern is known once next returns.
func metricsMiddleware(m Metrics) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status, code := c.Response().Status, ""
			if err != nil && !c.Response().Committed {
				he := toHTTP(err)
				status, code = he.Status, he.Code
			}
			m.RequestObserved(c.Request().Method, c.Path(), status, code, time.Since(start))
			return err
		}
	}
}

// serveMetrics serves GET /metrics: open, or with PHASEFLOW_METRICS_TOKEN set, only to
// "Authorization: Bearer <that token>" (compared in constant time).
func (s *Server) serveMetrics(c echo.Context) error {
	if want := s.cfg.MetricsToken; want != "" {
		got, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(want)) != 1 {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="phaseflow-metrics"`)
			return fmt.Errorf("%w: metrics token", auth.ErrUnauthorized)
		}
	}
	s.metrics.Handler().ServeHTTP(c.Response(), c.Request())
	return nil
}
