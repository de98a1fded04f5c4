package api

import (
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// headerRequestID is echoed on every answer and becomes a message's request_id.
const headerRequestID = "X-Request-Id"

// requestIDMiddleware takes the client's X-Request-Id (bounded, visible ASCII) or makes one.
func requestIDMiddleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id := c.Request().Header.Get(headerRequestID)
			if !validRequestID(id) {
				id = uuid.NewString()
			}
			c.Set(headerRequestID, id)
			c.Response().Header().Set(headerRequestID, id)
			return next(c)
		}
	}
}

// validRequestID accepts 1–128 visible ASCII characters: the id is echoed in a header,
// logged and stored, so it must be plain text the database and a log reader take as is.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

func requestID(c echo.Context) string {
	id, _ := c.Get(headerRequestID).(string)
	return id
}

// loggedPath is the request's path as logs may hold it: a route whose path carries a
// credential (the answer page's token) is logged by its pattern.
func loggedPath(c echo.Context) string {
	if strings.Contains(c.Path(), ":token") {
		return c.Path()
	}
	return c.Request().URL.Path
}

// logMiddleware logs one line per request. It logs the path only, never the query string,
// because the events route carries stream tokens there, and an answer link's path by its
// pattern (loggedPath).
func logMiddleware(logger *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil {
				status = toHTTP(err).Status
			}
			logger.Info("request", "method", c.Request().Method, "path", loggedPath(c),
				"status", status, "duration_ms", time.Since(start).Milliseconds(), "request_id", requestID(c))
			return err
		}
	}
}
