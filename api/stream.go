package api

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// eventStream is one client's event stream: the message's log after the client's position,
// written as SSE frames until the terminal event, the client leaving, or shutdown. Its
// handler starts it and, on an HTTP/1 connection, hands it to a writer of its own on the
// bare connection (detach.go).
type eventStream struct {
	srv       *Server
	cur       Cursor
	w         *sseWriter
	messageID string
	requestID string
	follower  bool         // a GET …/events stream of an existing message (metrics)
	beat      *time.Ticker // heartbeats, from the first byte
	failing   bool         // the last read failed: an outage is logged once, not per retry
}

// waitOutcome says why a stream stopped pumping.
type waitOutcome int

const (
	streamMore     waitOutcome = iota // more events may be available
	streamEnded                       // the terminal event was delivered
	streamGone                        // the client left or a write failed
	streamShutdown                    // the server is stopping (what was committed is delivered)
)

// stream writes the events of msg after position after until the terminal event, the
// client going away, or server shutdown. Heartbeats start with the first byte and go on
// while the database is unreachable (the cursor retries). Once its headers and first frame
// are out, the stream is detached from its handler where the connection allows it.
func (s *Server) stream(c echo.Context, msg *store.Message, after int64, follower bool) error {
	w, err := startSSE(c.Response(), c.Request().ProtoMajor, &s.frames)
	if err != nil {
		return nil // the client is already gone
	}
	es := s.openStream(msg, after, w, follower)
	if s.detach(c, es) {
		return nil // its own writer ends the stream
	}
	es.pump(c.Request().Context()) // HTTP/2: the stream stays in its handler
	es.close()
	return nil
}

// openStream starts following msg for a client that saw events up to after.
func (s *Server) openStream(msg *store.Message, after int64, w *sseWriter, follower bool) *eventStream {
	s.metrics.StreamOpened()
	if follower {
		s.metrics.FollowerOpened()
	}
	return &eventStream{
		srv: s, cur: s.follow(msg.ID, after, msg.LastEventID), w: w,
		messageID: msg.ID, requestID: msg.RequestID, follower: follower,
		beat: time.NewTicker(s.cfg.HeartbeatInterval),
	}
}

// close stops the stream's heartbeats and counts it closed.
func (es *eventStream) close() {
	es.beat.Stop()
	es.srv.metrics.StreamClosed()
	if es.follower {
		es.srv.metrics.FollowerClosed()
	}
}

// pump delivers events as the log makes them available, until the stream ends, the client
// leaves or the server stops.
func (es *eventStream) pump(ctx context.Context) waitOutcome {
	for {
		evs, wait, err := es.cur.Next(ctx)
		if err != nil && !es.failing && ctx.Err() == nil {
			es.srv.logger.Warn("read event log; retrying", "message_id", es.messageID, "err", err)
		}
		es.failing = err != nil
		if err := es.deliver(evs); err != nil {
			return streamGone
		}
		if es.cur.Ended() {
			return streamEnded
		}
		out := es.waitMore(ctx, wait)
		if out == streamShutdown {
			evs, _, _ := es.cur.Next(ctx) // what was committed before the end, typically the terminal event
			_ = es.deliver(evs)
		}
		if out != streamMore {
			return out
		}
	}
}

// deliver writes evs in one flush, the stream's last when they end it.
func (es *eventStream) deliver(evs []store.Event) error {
	for _, ev := range evs {
		es.w.event(ev)
	}
	return es.w.flush(es.cur.Ended())
}

// waitMore waits for news on the log, sending heartbeats meanwhile.
func (es *eventStream) waitMore(ctx context.Context, wait <-chan struct{}) waitOutcome {
	for {
		select {
		case <-wait:
			return streamMore
		case <-es.beat.C:
			if err := es.heartbeat(); err != nil {
				return streamGone
			}
		case <-ctx.Done():
			return streamGone
		case <-es.srv.streamsDone:
			return streamShutdown
		}
	}
}

// heartbeat sends the unlogged heartbeat event with the stream's position.
func (es *eventStream) heartbeat() error {
	hb := events.HeartbeatData{
		Base: events.Base{MessageID: es.messageID, RequestID: es.requestID},
		TS:   time.Now().UnixMilli(), LastEventID: es.cur.Position(),
	}
	return es.w.unlogged(events.Heartbeat, hb)
}
