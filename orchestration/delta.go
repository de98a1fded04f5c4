package orchestration

import (
	"encoding/json"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// appendDelta adds a content_delta's text to text, restarting on a retry the way a client
// does, so a recovered message keeps exactly what clients assembled.
func appendDelta(text []byte, ev store.Event) []byte {
	switch ev.Name {
	case events.ContentDelta:
		var d events.DeltaData
		if json.Unmarshal(ev.Data, &d) == nil {
			return append(text, d.Delta...)
		}
	case events.Status:
		var s events.StatusData
		if json.Unmarshal(ev.Data, &s) == nil && s.State == events.StateRetrying {
			return text[:0]
		}
	}
	return text
}
