package api

import (
	"context"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// eventStream is one client's event stream: the message's log after the client's position,
// written as SSE frames until the terminal event, the client leaving, or shutdown. Its
// handler starts it and, on an HTTP/1 connection, detaches it from the handler (detach.go),
// after which it waits without a goroutine (waiting.go); an HTTP/2 stream is pumped by its
// handler.
type eventStream struct {
	srv       *Server
	cur       Cursor
	w         *sseWriter
	messageID string
	requestID string
	follower  bool   // a GET …/events stream of an existing message (metrics)
	release   func() // gives the user's stream slot back
	opened    time.Time
	from      int64 // the client's Last-Event-ID (0: from the start)
	sent      int   // events written
	failing   bool  // the last read failed: an outage is logged once, not per retry

	// A detached stream's state (waiting.go).
	mu      sync.Mutex
	running bool              // its goroutine runs: others only leave it news
	pending signal            // what happened since that goroutine last looked
	wakeFn  func()            // wake, made once: the log keeps it while the stream waits
	slot    int               // its slot in the heartbeat wheel
	end     func(waitOutcome) // gives the connection back or closes it
}

// waitOutcome says why a stream stopped.
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
// are out, the stream is detached from its handler where the connection allows it. release
// gives the user's stream slot back when the stream closes. proto, when set, writes the
// events in a client protocol's frames; it was given the client's position, and the log is
// read from its start (a translation needs what came before).
func (s *Server) stream(c echo.Context, msg *store.Message, after int64, follower bool, proto Protocol, release func()) error {
	w, err := startSSE(c.Response(), c.Request().ProtoMajor, &s.frames)
	if err != nil {
		release()
		return nil // the client is already gone
	}
	if proto != nil {
		w.proto, w.retry, after = proto, false, 0
	}
	es := s.openStream(msg, after, w, follower)
	es.release = release
	if s.detach(c, es) {
		return nil // it delivers on its own from now on
	}
	es.pump(c.Request().Context()) // HTTP/2: the stream stays in its handler
	es.close()
	return nil
}

// openStream starts following msg for a client that saw events up to after.
func (s *Server) openStream(msg *store.Message, after int64, w *sseWriter, follower bool) *eventStream {
	s.metrics.StreamOpened()
	s.metrics.StreamResumed(after > 0, msg.LastEventID-after)
	if follower {
		s.metrics.FollowerOpened()
	}
	return &eventStream{
		srv: s, cur: s.follow(msg.ID, after, msg.LastEventID), w: w,
		messageID: msg.ID, requestID: msg.RequestID, follower: follower, opened: time.Now(), from: after,
	}
}

// close counts the stream closed and logs its life in one line.
func (es *eventStream) close() {
	es.srv.logger.Info("event stream closed", "message_id", es.messageID, "request_id", es.requestID,
		"open", time.Since(es.opened).String(), "events", es.sent, "resumed_from", es.from, "follower", es.follower)
	es.release()
	es.srv.metrics.StreamClosed()
	if es.follower {
		es.srv.metrics.FollowerClosed()
	}
}

// pump delivers events as the log makes them available, until the stream ends, the client
// leaves or the server stops: the stream of a handler that keeps it (HTTP/2).
func (es *eventStream) pump(ctx context.Context) waitOutcome {
	beat := time.NewTicker(es.srv.cfg.HeartbeatInterval)
	defer beat.Stop()
	for {
		evs, wait, err := es.cur.Next(ctx)
		es.noteRead(ctx, err)
		if err := es.deliver(evs); err != nil {
			return streamGone
		}
		if es.cur.Ended() {
			return streamEnded
		}
		out := es.waitMore(ctx, wait, beat.C)
		if out == streamShutdown {
			es.deliverCommitted(ctx)
		}
		if out != streamMore {
			return out
		}
	}
}

// noteRead logs the first of a run of failed reads of the log.
func (es *eventStream) noteRead(ctx context.Context, err error) {
	if err != nil && !es.failing && ctx.Err() == nil {
		es.srv.logger.Warn("read event log; retrying", "message_id", es.messageID, "err", err)
	}
	es.failing = err != nil
}

// deliver writes evs in one flush, the stream's last when they end it.
func (es *eventStream) deliver(evs []store.Event) error {
	for _, ev := range evs {
		es.w.event(ev)
	}
	es.sent += len(evs)
	return es.w.flush(es.cur.Ended())
}

// deliverCommitted delivers, at shutdown, what was committed before the end (typically the
// terminal event of a turn the shutdown interrupted).
func (es *eventStream) deliverCommitted(ctx context.Context) {
	evs, _, _ := es.cur.Next(ctx)
	_ = es.deliver(evs)
}

// waitMore waits for news on the log, sending heartbeats meanwhile.
func (es *eventStream) waitMore(ctx context.Context, wait <-chan struct{}, beat <-chan time.Time) waitOutcome {
	for {
		select {
		case <-wait:
			return streamMore
		case <-beat:
			if err := es.heartbeat(); err != nil {
				return streamGone
			}
		case <-ctx.Done():
			return streamGone
		case <-es.srv.streamsCtx.Done():
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
	return es.w.heartbeat(hb)
}
