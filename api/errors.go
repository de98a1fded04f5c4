package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// HTTPError is an error with the status and client-facing code and message it should be
// answered with. Err, when set, is the internal cause: logged, never shown to the client.
type HTTPError struct {
	Status  int
	Code    string
	Message string
	// Extra fields merged into the error object (e.g. the running message_id of a 409).
	Extra map[string]any
	Err   error
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

// toHTTP maps any error a handler returns to the answer it deserves.
func toHTTP(err error) *HTTPError {
	var he *HTTPError
	var ee *echo.HTTPError
	var running *store.GenerationRunningError
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
	case errors.Is(err, store.ErrNotFound):
		return &HTTPError{Status: http.StatusNotFound, Code: "not_found", Message: "not found", Err: err}
	case errors.Is(err, store.ErrPhaseChanged):
		return &HTTPError{Status: http.StatusConflict, Code: "phase_changed", Message: "the session's phase changed meanwhile; read it again", Err: err}
	case errors.Is(err, phases.ErrForbiddenMove):
		return &HTTPError{Status: http.StatusUnprocessableEntity, Code: "phase_move_forbidden", Message: err.Error(), Err: err}
	case errors.Is(err, orchestration.ErrOverCapacity):
		return &HTTPError{Status: http.StatusServiceUnavailable, Code: "over_capacity", Message: "too many replies are being generated; retry shortly", Err: err}
	case errors.Is(err, orchestration.ErrShuttingDown):
		return &HTTPError{Status: http.StatusServiceUnavailable, Code: "shutting_down", Message: "the server is shutting down; retry shortly", Err: err}
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

// errorHandler is the one place errors become answers. It logs server faults with their
// cause and answers the client with the mapped code and message only.
func errorHandler(logger *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		he := toHTTP(err)
		if he.Status >= 500 {
			logger.Error("request failed", "request_id", requestID(c), "status", he.Status, "err", err)
		}
		if c.Response().Committed {
			return // a stream already started; its own error event told the client
		}
		if he.Status == http.StatusServiceUnavailable || he.Status == http.StatusTooManyRequests {
			c.Response().Header().Set("Retry-After", "1")
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
