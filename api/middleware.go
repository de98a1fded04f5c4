package api

import (
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// headerRequestID is echoed on every answer and becomes a message's request_id.
const headerRequestID = "X-Request-Id"

// requestIDMiddleware takes the client's X-Request-Id (bounded in length) or makes one.
func requestIDMiddleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id := c.Request().Header.Get(headerRequestID)
			if id == "" || len(id) > 128 {
				id = uuid.NewString()
			}
			c.Set(headerRequestID, id)
			c.Response().Header().Set(headerRequestID, id)
			return next(c)
		}
	}
}

func requestID(c echo.Context) string {
	id, _ := c.Get(headerRequestID).(string)
	return id
}

// logMiddleware logs one line per request. It logs the path only, never the query string,
// because the events route carries stream tokens there.
func logMiddleware(logger *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil {
				status = toHTTP(err).Status
			}
			logger.Info("request", "method", c.Request().Method, "path", c.Request().URL.Path,
				"status", status, "duration_ms", time.Since(start).Milliseconds(), "request_id", requestID(c))
			return err
		}
	}
}
