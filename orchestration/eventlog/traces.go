package eventlog

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// traceBook keeps the requests a message's turn sent upstream until they are written,
// redacted as the store records them (store.Trace). Each body holds the whole prompt, so
// the turn does not keep them for the minutes a reply may stream: they go to the log once
// the reply's first content delta is out (not with it: a client waits on that commit), or
// with the terminal event. Redacting parses the body as deep as its JSON nests; it runs on
// a goroutine of its own while the request is on the wire, and the terminal event waits
// for every redaction started.
type traceBook struct {
	mu      sync.Mutex
	pending []*pendingTrace // in the order reported
}

// pendingTrace is one request being redacted: row is set once done is closed.
type pendingTrace struct {
	done chan struct{}
	row  store.Trace
}

// add starts redacting one request.
func (b *traceBook) add(attempt, seq int, s upstream.Sent) {
	p := &pendingTrace{done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, p)
	b.mu.Unlock()
	go func() { // owned by the book: the terminal event (all) waits for it
		defer close(p.done)
		p.row = traceRow(attempt, seq, s)
	}()
}

// ready returns the requests whose redaction is over, and forgets them.
func (b *traceBook) ready() []store.Trace {
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

// all waits for every redaction started and returns the requests not written yet.
func (b *traceBook) all() []store.Trace {
	b.mu.Lock()
	pending := slices.Clone(b.pending)
	b.pending = nil
	b.mu.Unlock()
	var out []store.Trace
	for _, p := range pending {
		<-p.done
		out = append(out, p.row)
	}
	return out
}

// traceRow is s as the store records it: redacted, the body cut at its cap.
func traceRow(attempt, seq int, s upstream.Sent) store.Trace {
	tr := s.Redacted()
	headers, err := json.Marshal(tr.Header)
	if err != nil { // a map of strings always encodes; were it not to, say so in the row
		headers = []byte(`{"encoding_error":["the headers could not be encoded"]}`)
	}
	return store.Trace{Attempt: attempt, Seq: seq, Method: tr.Method, URL: tr.URL,
		Headers: headers, Body: tr.Body, Truncated: tr.Truncated, SentAt: tr.At}
}
