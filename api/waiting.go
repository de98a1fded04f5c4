package api

// A detached stream has no goroutine while it waits, and waiting is most of its life: for
// the model's next token, a tool call, the next event of a message another device follows.
// The event log calls its wake when more may be available (Cursor.NextFunc), and the
// server's heartbeat wheel (wheel.go) tells it when a heartbeat is due and when the server
// ends its streams; the first of them starts the stream's one goroutine, which delivers
// until nothing is pending and exits, and the others only leave it news. A goroutine of
// its own held every waiting stream's stack, counted twice towards the process's memory,
// since the collector's heap goal counts stacks too.
//
// The server's detached count holds the stream from its start until it has ended, so
// shutdown waits for it whether or not a goroutine of its runs at the moment.

// signal is a set of things that happened to a detached stream.
type signal uint8

const (
	sigNews signal = 1 << iota // the log may have more
	sigBeat                    // a heartbeat is due
	sigEnd                     // the server is ending streams
)

// startDetached makes the stream wait without a goroutine of its own, after delivering, on
// the caller's goroutine, what the log has now.
func (es *eventStream) startDetached() {
	es.srv.detached.Add(1)
	es.wakeFn = es.wake
	sig := sigNews
	if !es.srv.wheel.join(es) {
		sig |= sigEnd // the server ended its streams already
	}
	es.signal(sig, true)
}

// wake is called by the event log, on its committer's goroutine or a timer's, when more
// may be available: the stream's goroutine starts on a goroutine of its own.
func (es *eventStream) wake() { es.signal(sigNews, false) }

// signal records sig and starts the stream's goroutine unless it runs: here, or on a
// goroutine of its own when the caller must not be held.
func (es *eventStream) signal(sig signal, here bool) {
	es.mu.Lock()
	es.pending |= sig
	start := !es.running
	es.running = true
	es.mu.Unlock()
	switch {
	case !start:
	case here:
		es.run()
	default:
		go es.run()
	}
}

// run is the stream's goroutine: it acts on what is pending until nothing is, then exits.
// When the stream ends it stays marked running, so that nothing starts it again.
func (es *eventStream) run() {
	for {
		es.mu.Lock()
		sig := es.pending
		es.pending = 0
		es.running = sig != 0
		es.mu.Unlock()
		if sig == 0 {
			return
		}
		if out := es.handle(sig); out != streamMore {
			es.finish(out)
			return
		}
	}
}

// handle acts on sig: at the server's end it delivers what was committed and ends the
// stream; otherwise it sends a heartbeat that is due, then what the log has.
func (es *eventStream) handle(sig signal) waitOutcome {
	ctx := es.srv.detachedCtx
	if sig&sigEnd != 0 {
		es.deliverCommitted(ctx)
		return streamShutdown
	}
	if sig&sigBeat != 0 {
		if es.heartbeat() != nil {
			return streamGone
		}
	}
	if sig&sigNews == 0 {
		return streamMore
	}
	evs, err := es.cur.NextFunc(ctx, es.wakeFn)
	es.noteRead(ctx, err)
	switch {
	case es.deliver(evs) != nil:
		return streamGone
	case es.cur.Ended():
		return streamEnded
	}
	return streamMore
}

// finish ends a detached stream: no more heartbeats or end of streams for it, its
// connection given back or closed, and the server's count let go.
func (es *eventStream) finish(out waitOutcome) {
	es.srv.wheel.leave(es)
	es.close()
	es.end(out)
	es.srv.detached.Done()
}
