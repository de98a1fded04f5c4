package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// getEvents serves GET /api/v1/messages/{id}/events: the message's log after Last-Event-ID,
// then the live tail, until the terminal event.
func (s *Server) getEvents(c echo.Context) error {
	claims := mustClaims(c)
	after, err := lastEventID(c)
	if err != nil {
		return err
	}
	msg, err := s.store.GetMessage(c.Request().Context(), c.Param("id"), claims.Subject)
	if err != nil {
		return err
	}
	if msg.Role != "assistant" {
		return &HTTPError{Status: http.StatusNotFound, Code: "not_found", Message: "this message has no event stream"}
	}
	if isFinished(msg) && after >= msg.LastEventID {
		return c.NoContent(http.StatusNoContent) // tells EventSource to stop reconnecting
	}
	s.metrics.FollowerOpened() // a client following an existing message (any stream route counts as a stream)
	defer s.metrics.FollowerClosed()
	return s.stream(c, msg, after)
}

// lastEventID reads the client's resume point from the header or the query.
func lastEventID(c echo.Context) (int64, error) {
	v := c.Request().Header.Get("Last-Event-ID")
	if v == "" {
		v = c.QueryParam("last_event_id")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("Last-Event-ID must be a non-negative integer")
	}
	return n, nil
}

func isFinished(m *store.Message) bool {
	switch m.Status {
	case store.StatusPending, store.StatusStreaming:
		return false
	}
	return true
}

// stream writes the events of msg after position after until the terminal event, the
// client going away, or server shutdown. Heartbeats start with the first byte and go on
// while the database is unreachable (the cursor retries).
func (s *Server) stream(c echo.Context, msg *store.Message, after int64) error {
	ctx := c.Request().Context()
	w, err := startSSE(c.Response(), c.Request().ProtoMajor, &s.frames)
	if err != nil {
		return nil // the client is already gone
	}
	s.metrics.StreamOpened()
	defer s.metrics.StreamClosed()
	cur := s.follow(msg.ID, after, msg.LastEventID)
	beat := time.NewTicker(s.cfg.HeartbeatInterval)
	defer beat.Stop()
	var failing bool
	for {
		evs, wait, err := cur.Next(ctx)
		if err != nil && !failing && ctx.Err() == nil {
			s.logger.Warn("read event log; retrying", "message_id", msg.ID, "err", err)
		}
		failing = err != nil
		if done, err := s.deliver(w, evs, cur.Ended()); done || err != nil {
			return nil
		}
		switch s.waitMore(ctx, w, wait, beat.C, msg, cur.Position()) {
		case streamGone:
			return nil
		case streamShutdown:
			evs, _, _ := cur.Next(ctx) // what was committed before the end, typically the terminal event
			_, _ = s.deliver(w, evs, cur.Ended())
			return nil
		}
	}
}

func (s *Server) deliver(w *sseWriter, evs []store.Event, ended bool) (bool, error) {
	for _, ev := range evs {
		w.event(ev)
	}
	if err := w.flush(); err != nil {
		return true, err
	}
	return ended, nil
}

// waitOutcome says why waitMore returned.
type waitOutcome int

const (
	streamMore     waitOutcome = iota // more events may be available
	streamGone                        // the client left or a write failed
	streamShutdown                    // the server is stopping
)

// waitMore waits for news on the log, sending heartbeats meanwhile.
func (s *Server) waitMore(ctx context.Context, w *sseWriter, wait <-chan struct{}, beat <-chan time.Time, msg *store.Message, pos int64) waitOutcome {
	for {
		select {
		case <-wait:
			return streamMore
		case <-beat:
			hb := events.HeartbeatData{Base: events.Base{MessageID: msg.ID, RequestID: msg.RequestID}, TS: time.Now().UnixMilli(), LastEventID: pos}
			if err := w.unlogged(events.Heartbeat, hb); err != nil {
				return streamGone
			}
		case <-ctx.Done():
			return streamGone
		case <-s.streamsDone:
			return streamShutdown
		}
	}
}
