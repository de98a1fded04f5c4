package api

import (
	"net/http"

	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// streamRetryAfter is the Retry-After of a 429 too_many_streams: one of the user's streams
// ends when its reply does, or when a tab is closed.
const streamRetryAfter = 5 * time.Second

// streamSlots counts each user's open event streams against a cap, so one token opening
// thousands of streams cannot take the connections (and file descriptors) every other
// user and the database need. Unlike the other per-user limits, which count in the
// database across replicas, this one counts on each replica: it guards the replica's own
// connections.
type streamSlots struct {
	max  int // 0: no cap
	mu   sync.Mutex
	open map[string]int
}

func newStreamSlots(max int) *streamSlots { return &streamSlots{max: max, open: map[string]int{}} }

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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && s.open[user] >= s.max {
		return nil, &HTTPError{Status: http.StatusTooManyRequests, Code: "too_many_streams",
			Message: "you already have as many event streams open as allowed; close one or retry later", RetryAfter: streamRetryAfter}
	}
	s.open[user]++
	return sync.OnceFunc(func() { s.give(user) }), nil
}

func (s *streamSlots) give(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[user]--; s.open[user] <= 0 {
		delete(s.open, user)
	}
}
