package api

import (
	"bytes"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/playground"
)

// servePlayground answers GET / with the playground page.
func servePlayground(c echo.Context) error { return serveAsset(c, playground.IndexFile) }

// serveReference answers GET /reference with the API reference page, which renders the
// served OpenAPI document.
func serveReference(c echo.Context) error { return serveAsset(c, playground.ReferenceFile) }

// servePlaygroundFile answers GET /playground/{file}: the page's scripts, styles and icon.
func servePlaygroundFile(c echo.Context) error { return serveAsset(c, c.Param("file")) }

// servePlaygroundVendor answers GET /playground/vendor/{file}: the vendored libraries.
func servePlaygroundVendor(c echo.Context) error { return serveAsset(c, "vendor/"+c.Param("file")) }

// servePlaygroundClient serves GET /playground/client/{file}: the JavaScript client's
// modules (clients/js/src), which the page imports.
func servePlaygroundClient(c echo.Context) error { return serveAsset(c, "client/"+c.Param("file")) }

// serveAsset writes one file of the page with the page's Content-Security-Policy and an
// ETag, so the browser revalidates (304) instead of keeping files of an older binary.
func serveAsset(c echo.Context, name string) error {
	a, err := playground.Open(name)
	if errors.Is(err, playground.ErrNotFound) {
		return &HTTPError{Status: http.StatusNotFound, Code: "not_found", Message: "not found", Err: err}
	}
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("Content-Security-Policy", playground.ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.ETag)
	http.ServeContent(c.Response(), c.Request(), a.Name, time.Time{}, bytes.NewReader(a.Body))
	return nil
}
