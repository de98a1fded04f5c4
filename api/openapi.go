package api

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPIDoc is the OpenAPI document of every route [Server.routes] registers.
// openapi_test.go validates it and checks that its operations match the registered routes.
//
//go:embed openapi.yaml
var openAPIDoc []byte

// serveOpenAPI serves GET /api/v1/openapi.yaml, without auth.
func serveOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", openAPIDoc)
}
