package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/genui"
)

// serveGenUISchema serves GET /api/v1/genui/schema.json, without auth: the JSON Schema
// (2020-12) every GenUI card the server sends matches, for front ends to generate types
// from or to check cards in their own tests.
func serveGenUISchema(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/schema+json", genui.Schema())
}
