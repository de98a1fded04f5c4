package orchestration

import (
	"encoding/json"
	"sync"

	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/store"
)

// traceBook keeps the requests a turn sent upstream until they are recorded. Each body
// holds the whole prompt (a few KiB, more with a long history), so the turn does not keep
// them for the minutes a reply may stream: once the reply streams (its first delta is
// committed: see turnSink.Delta) they go to the event log, which writes them with its next
// commit. What was sent after the last delta, or by a turn that streamed none, is recorded
// by the terminal event (store.TurnRecords). The upstream reports a request from whichever
// goroutine sends it; the turn's own goroutine takes them.
type traceBook struct {
	mu      sync.Mutex
	pending []stream.Sent
}

// add keeps s until it is recorded.
func (b *traceBook) add(s stream.Sent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, s)
}

// take returns the requests kept and forgets them.
func (b *traceBook) take() []stream.Sent {
	b.mu.Lock()
	defer b.mu.Unlock()
	sent := b.pending
	b.pending = nil
	return sent
}

// unrecorded returns the requests kept, still kept: the terminal event records them, and
// a turn whose completed event the store refuses records them again with its error event.
func (b *traceBook) unrecorded() []stream.Sent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending
}

// recordTraces hands the requests sent so far to the event log, redacted. Those the log
// does not take (the message is lost) are of no further use either.
func (t *turn) recordTraces() {
	if sent := t.traces.take(); len(sent) > 0 {
		_ = t.em.Record(traceRows(sent))
	}
}

// traceRows is sent as the store records it: redacted, the body cut at its cap.
func traceRows(sent []stream.Sent) []store.Trace {
	rows := make([]store.Trace, 0, len(sent))
	for _, s := range sent {
		tr := s.Redacted()
		headers, _ := json.Marshal(tr.Header)
		rows = append(rows, store.Trace{Attempt: s.Attempt, Seq: s.Seq, Method: tr.Method, URL: tr.URL,
			Headers: headers, Body: tr.Body, Truncated: tr.Truncated, SentAt: tr.At})
	}
	return rows
}
