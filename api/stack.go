package api

import (
	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/internal/growstack"
)

// growForWrites grows the stack of a request with a body to 16 KiB before anything else
// runs. Such a request writes: a turn's begin or a new session, through the store and
// encoding/json, where the stack doubled three times over, the last at 37 frames deep and
// each copy walking every frame (package growstack). Requests without a body (reads, and
// the event streams followers hold open for a whole reply) keep the small stack they need.
func growForWrites() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().ContentLength != 0 {
				growstack.To16KiB()
			}
			return next(c)
		}
	}
}
