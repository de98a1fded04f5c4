package orchestration

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/store"
)

// traceBook keeps the requests a turn sent upstream until they are recorded, redacted as
// the store records them. Each body holds the whole prompt (a few KiB, more with a long
// history), so the turn does not keep them for the minutes a reply may stream: they go to
// the event log once the reply's first delta has reached clients, and ride with the next
// commit (turnSink.Delta, eventlog.Writer.Record). A later request (a failover, a
// correction) goes with the first delta after its redaction is over. What was sent after
// the last delta, or by a turn that streamed none, is recorded by the terminal event
// (store.TurnRecords).
type traceBook struct {
	mu      sync.Mutex
	pending []*pendingTrace // in the order reported
}

// pendingTrace is one request being redacted: row is set once done is closed.
type pendingTrace struct {
	done chan struct{}
	row  store.Trace
}

// add keeps s, redacted on a goroutine of its own, until it is recorded. Redacting parses
// the request's body as deep as its JSON nests, and with MCP tools configured decodes it
// whole. On the generation's goroutine that would grow the stack the goroutine then keeps
// for as long as the reply streams (docs/performance.md), or delay the request; here it
// runs while the request is on the wire. The terminal event's records wait for them, and
// the turn waits for all of them before it ends (wait).
func (b *traceBook) add(s stream.Sent) {
	p := &pendingTrace{done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, p)
	b.mu.Unlock()
	go func() {
		defer close(p.done)
		p.row = traceRow(s)
	}()
}

// take returns the requests kept whose redaction is over, and forgets them; with wait, it
// first waits for the redactions under way. Only the reply's first delta waits, once it has
// been delivered: redacting began when the request went out, so it is over by then unless
// the upstream answers faster than a few KiB of JSON parse, and the trace then goes to the
// log now rather than be kept until the next delta, which a slow model sends seconds
// later. Other deltas never wait; a request still being redacted is taken by a later call
// (or by the terminal event, unrecorded).
func (b *traceBook) take(wait bool) []store.Trace {
	if wait {
		b.wait()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []store.Trace
	kept := b.pending[:0]
	for _, p := range b.pending {
		select {
		case <-p.done:
			out = append(out, p.row)
		default:
			kept = append(kept, p)
		}
	}
	clear(b.pending[len(kept):])
	b.pending = kept
	return out
}

// unrecorded returns the requests kept, once redacted, still kept: the terminal event
// records them, and a turn whose completed event the store refuses records them again with
// its error event.
func (b *traceBook) unrecorded() []store.Trace {
	b.mu.Lock()
	pending := slices.Clone(b.pending) // take compacts b.pending in place
	b.mu.Unlock()
	var out []store.Trace
	for _, p := range pending {
		<-p.done
		out = append(out, p.row)
	}
	return out
}

// wait returns once every request reported so far is redacted.
func (b *traceBook) wait() { _ = b.unrecorded() }

// recordTraces hands the requests sent so far to the event log (with wait, once their
// redactions are over: traceBook.take). Those the log does not take (the message is lost)
// are of no further use either.
func (t *turn) recordTraces(wait bool) {
	if rows := t.traces.take(wait); len(rows) > 0 {
		_ = t.em.Record(rows)
	}
}

// traceRow is s as the store records it: redacted, the body cut at its cap.
func traceRow(s stream.Sent) store.Trace {
	tr := s.Redacted()
	headers, _ := json.Marshal(tr.Header)
	return store.Trace{Attempt: s.Attempt, Seq: s.Seq, Method: tr.Method, URL: tr.URL,
		Headers: headers, Body: tr.Body, Truncated: tr.Truncated, SentAt: tr.At}
}
