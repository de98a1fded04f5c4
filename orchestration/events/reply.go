package events

import (
	"encoding/json"

	"github.com/phaseflow/phaseflow/store"
)

// Reply assembles the reply text of a message's logged events the way a client does
// (docs/api.md): the content deltas in seq order, and on a retrying status the
// deltas up to its discard_through_seq dropped (all of them for a log written before seq
// went on across attempts, which has no discard_through_seq). Recovery keeps exactly this
// as a dead turn's partial text.
type Reply struct{ deltas []DeltaData }

// Add takes the next event of the log.
func (r *Reply) Add(ev store.Event) {
	switch ev.Name {
	case ContentDelta:
		var d DeltaData
		if json.Unmarshal(ev.Data, &d) == nil {
			r.deltas = append(r.deltas, d)
		}
	case Status:
		var s StatusData
		if json.Unmarshal(ev.Data, &s) != nil || s.State != StateRetrying {
			return
		}
		if s.DiscardThroughSeq == nil {
			r.deltas = r.deltas[:0]
			return
		}
		kept := r.deltas[:0]
		for _, d := range r.deltas {
			if d.Seq > *s.DiscardThroughSeq {
				kept = append(kept, d)
			}
		}
		r.deltas = kept
	}
}

// String is the reply assembled so far.
func (r *Reply) String() string {
	var b []byte
	for _, d := range r.deltas {
		b = append(b, d.Delta...)
	}
	return string(b)
}
