package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
)

// bodyLimitMiddleware caps request bodies with http.MaxBytesReader. It is used instead of
// echo's BodyLimit, whose pooled reader must not be touched after the handler returns.
func bodyLimitMiddleware(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength > limit {
				return tooLarge(limit)
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
			return next(c)
		}
	}
}

func tooLarge(limit int64) *HTTPError {
	return &HTTPError{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large",
		Message: fmt.Sprintf("request body is larger than %d bytes", limit)}
}

// readBody reads the whole body, mapping an over-long one to 413. Reading the body to EOF
// also lets net/http notice a client that goes away (golang/go#23262).
func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge(mbe.Limit)
	}
	if err != nil {
		return nil, badRequest("could not read the request body")
	}
	return b, nil
}

// decodeJSON reads a JSON object body into v. An empty body leaves v as it is.
func decodeJSON(c echo.Context, v any) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return badRequest("the body is not the JSON object this route takes: " + err.Error())
	}
	return nil
}
