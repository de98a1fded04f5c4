package session

import (
	"encoding/json"
	"fmt"

	"github.com/phaseflow/phaseflow/store"
)

// Artifacts is a session's artifacts column: one block per phase, keyed by phase name.
type Artifacts map[string]map[string]any

// DecodeArtifacts reads a session's artifacts column.
func DecodeArtifacts(raw store.JSON) (Artifacts, error) {
	a := Artifacts{}
	if len(raw) == 0 || string(raw) == "null" {
		return a, nil
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("session: decode artifacts: %w", err)
	}
	return a, nil
}

// Encode writes the artifacts back.
func (a Artifacts) Encode() (store.JSON, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("session: encode artifacts: %w", err)
	}
	return store.JSON(b), nil
}

// Fill makes sure phase has a block and gives every field of initial that the block lacks
// its initial value, so prompts and handlers never meet a missing block.
func (a Artifacts) Fill(phase string, initial map[string]any) map[string]any {
	block := a[phase]
	if block == nil {
		block = map[string]any{}
	}
	for k, v := range initial {
		if _, ok := block[k]; !ok {
			block[k] = v
		}
	}
	a[phase] = block
	return block
}

// Clone copies the artifacts one block deep, so a step can change its copy without
// touching what an earlier step holds.
func (a Artifacts) Clone() Artifacts {
	out := make(Artifacts, len(a))
	for phase, block := range a {
		b := make(map[string]any, len(block))
		for k, v := range block {
			b[k] = v
		}
		out[phase] = b
	}
	return out
}
