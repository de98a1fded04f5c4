package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/userlimit"
)

// streamRetryAfter is the Retry-After of a 429 too_many_streams: one of the user's streams
// ends when its reply does, or when a tab is closed.
const streamRetryAfter = 5 * time.Second

// streamSlots answers for the per-user cap of open event streams (userlimit.Streams) over
// HTTP.
type streamSlots struct{ streams *userlimit.Streams }

func newStreamSlots(max int) *streamSlots { return &streamSlots{streams: userlimit.NewStreams(max)} }

// take holds one of user's slots for c and returns the function that gives it back
// (once), or the 429 to answer when the user already holds them all. A refused stream's
// connection is closed after the answer: a client opening streams in a loop must not keep
// the connections it was refused.
func (s *streamSlots) take(c echo.Context, user string) (func(), error) {
	release, err := s.hold(user)
	if err != nil {
		c.Response().Header().Set(echo.HeaderConnection, "close")
	}
	return release, err
}

// hold holds one of user's slots, or answers why not.
func (s *streamSlots) hold(user string) (func(), error) {
	release, ok := s.streams.Take(user)
	if !ok {
		return nil, &HTTPError{Status: http.StatusTooManyRequests, Code: "too_many_streams",
			Message: "you already have as many event streams open as allowed; close one or retry later", RetryAfter: streamRetryAfter}
	}
	return release, nil
}
