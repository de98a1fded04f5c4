package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/userlimit"
)

// HTTPError is an error with the status and client-facing code and message it should be
// answered with. Err, when set, is the internal cause: logged, never shown to the client.
type HTTPError struct {
	Status  int
	Code    string
	Message string
	// Extra fields merged into the error object (e.g. the running message_id of a 409).
	Extra map[string]any
	// RetryAfter, on a 429 or 503, is sent as Retry-After (rounded up to whole seconds);
	// zero means 1 second.
	RetryAfter time.Duration
	Err        error
}

func (e *HTTPError) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *HTTPError) Unwrap() error { return e.Err }

// badRequest is the error for input the client must fix.
func badRequest(msg string) *HTTPError {
	return &HTTPError{Status: http.StatusBadRequest, Code: "bad_request", Message: msg}
}

// tooLarge answers a body over the limit.
func tooLarge(limit int64) *HTTPError {
	return &HTTPError{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large",
		Message: fmt.Sprintf("request body is larger than %d bytes", limit)}
}

// requestTimeout answers a body not sent within the body timeout.
func requestTimeout() *HTTPError {
	return &HTTPError{Status: http.StatusRequestTimeout, Code: "request_timeout",
		Message: "the request body was not sent in time"}
}

// unsupportedMediaType answers a body in a content type the route does not take.
func unsupportedMediaType(got, want string) *HTTPError {
	if got == "" {
		got = "no content type"
	}
	return &HTTPError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
		Message: fmt.Sprintf("this route takes %s, not %s", want, got)}
}

// methodNotAllowed answers a known path asked with another method; allow is the Allow
// header's value.
func methodNotAllowed(method, allow string) *HTTPError {
	return &HTTPError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
		Message: fmt.Sprintf("%s is not allowed here; allowed: %s", method, allow)}
}

// headersTooLarge answers a request whose line and headers exceed limit bytes.
func headersTooLarge(limit int) *HTTPError {
	return &HTTPError{Status: http.StatusRequestHeaderFieldsTooLarge, Code: "headers_too_large",
		Message: fmt.Sprintf("the request line and headers are larger than %d bytes", limit)}
}

// turnRetryAfter is the Retry-After of a 429 too_many_turns: a user's own generation
// usually needs a few seconds to end.
const turnRetryAfter = 5 * time.Second

// tooManyMessages answers a user over their message rate; retry is when the next message
// would be accepted.
func tooManyMessages(retry time.Duration) *HTTPError {
	return &HTTPError{Status: http.StatusTooManyRequests, Code: "too_many_messages",
		Message: "you are sending messages too fast; retry after the time in Retry-After", RetryAfter: retry}
}

// unsupportedLocale answers a locale the server has no texts for, naming those it has.
func unsupportedLocale(locale string) *HTTPError {
	return &HTTPError{Status: http.StatusBadRequest, Code: "unsupported_locale",
		Message: fmt.Sprintf(`locale %q is not supported; use one of "%s"`, locale, strings.Join(skills.Locales, `", "`)),
		Extra:   map[string]any{"supported": slices.Clone(skills.Locales)}}
}

// toHTTP maps any error a handler returns to the answer it deserves.
func toHTTP(err error) *HTTPError {
	var he *HTTPError
	var ee *echo.HTTPError
	var running *store.GenerationRunningError
	var exhausted *userlimit.ExhaustedError
	switch {
	case errors.As(err, &he):
		return he
	case errors.As(err, &running):
		return &HTTPError{Status: http.StatusConflict, Code: "generation_running",
			Message: "a generation is already running in this session", Extra: map[string]any{"message_id": running.MessageID}, Err: err}
	case errors.Is(err, auth.ErrUnauthorized):
		return &HTTPError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "missing or invalid token", Err: err}
	case errors.Is(err, auth.ErrForbidden):
		return &HTTPError{Status: http.StatusForbidden, Code: "forbidden", Message: "this route needs the admin role", Err: err}
	case errors.As(err, &exhausted):
		return &HTTPError{Status: http.StatusTooManyRequests, Code: "budget_exhausted",
			Message: "your model calls for today are used; retry after the time in Retry-After", RetryAfter: exhausted.RetryAfter, Err: err}
	case errors.Is(err, errPolicyNotAllowed):
		return &HTTPError{Status: http.StatusForbidden, Code: "policy_not_allowed", Message: err.Error(), Err: err}
	case errors.Is(err, store.ErrNotFound):
		return &HTTPError{Status: http.StatusNotFound, Code: "not_found", Message: "not found", Err: err}
	case errors.Is(err, store.ErrMessageFinished):
		return &HTTPError{Status: http.StatusConflict, Code: "message_finished", Message: "the message's generation has already ended", Err: err}
	case store.IsUnavailable(err):
		return &HTTPError{Status: http.StatusServiceUnavailable, Code: "database_unavailable", Message: "the database is unreachable; retry shortly", Err: err}
	case errors.Is(err, store.ErrPhaseChanged):
		return &HTTPError{Status: http.StatusConflict, Code: "phase_changed", Message: "the session's phase changed meanwhile; read it again", Err: err}
	case errors.Is(err, phases.ErrForbiddenMove):
		return &HTTPError{Status: http.StatusUnprocessableEntity, Code: "phase_move_forbidden", Message: err.Error(), Err: err}
	case errors.Is(err, userlimit.ErrTooManyTurns):
		return &HTTPError{Status: http.StatusTooManyRequests, Code: "too_many_turns",
			Message: "you already have as many replies generating as allowed; retry when one ends", RetryAfter: turnRetryAfter, Err: err}
	case errors.Is(err, orchestration.ErrOverCapacity):
		return &HTTPError{Status: http.StatusServiceUnavailable, Code: "over_capacity", Message: "too many replies are being generated; retry shortly", Err: err}
	case errors.Is(err, orchestration.ErrShuttingDown):
		return &HTTPError{Status: http.StatusServiceUnavailable, Code: "shutting_down", Message: "the server is shutting down; retry shortly", Err: err}
	case errors.Is(err, jsonskill.ErrUnknownSkill):
		return skillErrors(err)
	case errors.As(err, new(*jsonskill.InputError)):
		return skillErrors(err)
	case errors.Is(err, context.Canceled):
		return &HTTPError{Status: 499, Code: "client_closed", Message: "client closed the request", Err: err}
	case errors.As(err, &ee):
		return fromEcho(ee)
	}
	return &HTTPError{Status: http.StatusInternalServerError, Code: "internal_error", Message: "internal error", Err: err}
}

// fromEcho maps echo's own errors (unknown route, wrong method, body too large).
func fromEcho(ee *echo.HTTPError) *HTTPError {
	code := map[int]string{
		http.StatusNotFound:              "not_found",
		http.StatusMethodNotAllowed:      "method_not_allowed",
		http.StatusRequestEntityTooLarge: "body_too_large",
		http.StatusUnsupportedMediaType:  "unsupported_media_type",
		http.StatusBadRequest:            "bad_request",
	}[ee.Code]
	if code == "" {
		code = "http_" + strconv.Itoa(ee.Code)
	}
	msg, ok := ee.Message.(string)
	if !ok {
		msg = http.StatusText(ee.Code)
	}
	return &HTTPError{Status: ee.Code, Code: code, Message: msg, Err: ee.Internal}
}

// retryAfterSeconds renders d as Retry-After's whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(d.Seconds()))), 10)
}

// errorHandler is the one place errors become answers. It logs server faults with their
// cause and answers the client with the mapped code and message only.
func errorHandler(logger *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		he := toHTTP(err)
		if he.Status >= 500 && he.Code != codeNotReady { // readiness logs its own changes
			logger.Error("request failed", "request_id", requestID(c), "status", he.Status, "err", err)
		}
		if c.Response().Committed {
			return // a stream already started; its own error event told the client
		}
		if he.Status == http.StatusServiceUnavailable || he.Status == http.StatusTooManyRequests {
			c.Response().Header().Set("Retry-After", retryAfterSeconds(he.RetryAfter))
		}
		body := map[string]any{"code": he.Code, "message": he.Message}
		for k, v := range he.Extra {
			body[k] = v
		}
		if err := c.JSON(he.Status, map[string]any{"error": body}); err != nil {
			logger.Debug("write error answer", "err", err)
		}
	}
}
