package session

import (
	"encoding/json"
	"fmt"

	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/store"
)

// Metadata is the server-side state kept in a session's metadata column. Keys this version
// does not know are kept as they are, so an older binary never erases a newer one's state.
type Metadata struct {
	TurnCounts map[string]int   `json:"turn_counts,omitempty"`
	Carryover  *carryover.Block `json:"carryover,omitempty"`
	StrategyID string           `json:"strategy_id,omitempty"`
	// TitleSource is "auto" when the server set the session's title (see [AutoTitle]).
	TitleSource string `json:"title_source,omitempty"`

	rest map[string]json.RawMessage
}

// known lists the keys Metadata owns; everything else passes through untouched.
var known = []string{"turn_counts", "carryover", "strategy_id", "title_source"}

// DecodeMetadata reads a session's metadata column.
func DecodeMetadata(raw store.JSON) (Metadata, error) {
	var m Metadata
	if len(raw) == 0 || string(raw) == "null" {
		return m, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("session: decode metadata: %w", err)
	}
	if err := json.Unmarshal(raw, &m.rest); err != nil {
		return m, fmt.Errorf("session: decode metadata: %w", err)
	}
	for _, k := range known {
		delete(m.rest, k)
	}
	return m, nil
}

// Encode writes the metadata back, unknown keys included.
func (m Metadata) Encode() (store.JSON, error) {
	type plain Metadata // without methods, to avoid recursion
	own, err := json.Marshal(plain(m))
	if err != nil {
		return nil, fmt.Errorf("session: encode metadata: %w", err)
	}
	if len(m.rest) == 0 {
		return store.JSON(own), nil
	}
	merged := make(map[string]json.RawMessage, len(m.rest)+len(known))
	for k, v := range m.rest {
		merged[k] = v
	}
	if err := json.Unmarshal(own, &merged); err != nil {
		return nil, fmt.Errorf("session: encode metadata: %w", err)
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("session: encode metadata: %w", err)
	}
	return store.JSON(b), nil
}
