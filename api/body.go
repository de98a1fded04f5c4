package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// bodyLimitMiddleware caps request bodies with http.MaxBytesReader and gives a client
// timeout to send one: a read deadline on the connection, cleared once the body is read
// (readBody) or the event stream starts (startSSE), so slow senders are cut off without
// touching the answer. It is used instead of echo's BodyLimit, whose pooled reader must not
// be touched after the handler returns.
//
// The JSON skills' routes take more: the largest input a skill accepts, written as JSON (a
// terminal snapshot of escape sequences takes six bytes a byte, "\u001b"), so that the two
// limits agree.
func bodyLimitMiddleware(general, skills int64, timeout time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			limit := general
			if skillRoute(c.Path()) {
				limit = max(general, skills)
			}
			r := c.Request()
			if r.ContentLength > limit {
				return tooLarge(limit)
			}
			if r.ContentLength != 0 && timeout > 0 {
				// Not every writer supports deadlines (httptest recorders); those just
				// have no body deadline.
				_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Now().Add(timeout))
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
			return next(c)
		}
	}
}

// skillRoute reports the routes that take a JSON skill's inputs.
func skillRoute(path string) bool {
	return path == "/api/v1/skills/:name/runs" || path == "/api/v1/skills/:name/jobs"
}

// readBody reads the whole body, mapping an over-long one to 413 and one sent too slowly to
// 408. Reading the body to EOF also lets net/http notice a client that goes away
// (golang/go#23262); the body deadline is lifted afterwards so it cannot cut the request's
// context while the handler works.
func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge(mbe.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, requestTimeout()
	case err != nil:
		return nil, badRequest("could not read the request body")
	}
	_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Time{})
	return b, nil
}

// isJSON reports whether a Content-Type names JSON (application/json or a +json type).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == echo.MIMEApplicationJSON || strings.HasSuffix(mt, "+json"))
}

// decodeJSON reads a JSON object body into v. An empty body leaves v as it is. A body in
// another content type answers 415; strings holding NUL (which PostgreSQL refuses) or a body
// that is not UTF-8 answer 400.
func decodeJSON(c echo.Context, v any) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return nil
	}
	if ct := c.Request().Header.Get(echo.HeaderContentType); !isJSON(ct) {
		return unsupportedMediaType(ct, "application/json")
	}
	if err := checkJSONText(b); err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return badRequest("the body is not the JSON object this route takes: " + err.Error())
	}
	return nil
}

// checkJSONText refuses a body that is not UTF-8 (encoding/json would quietly turn the bad
// bytes into U+FFFD) or whose strings, keys included, hold NUL (written "\u0000").
func checkJSONText(b []byte) error {
	if !utf8.Valid(b) {
		return badRequest("the body is not valid UTF-8")
	}
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return nil // a raw NUL byte is not valid JSON, so the decoder refuses it
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error json.Unmarshal reports next
		}
		if s, ok := tok.(string); ok && strings.ContainsRune(s, 0) {
			return badRequest("a string in the body holds a NUL character")
		}
	}
}

// cleanText reports whether s is UTF-8 without NUL, as the database needs text to be.
func cleanText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
