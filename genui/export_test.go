package genui

import (
	"bytes"
	"encoding/json"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ValidateWhole holds a card to the whole schema from its root, the way Validate did before
// it went to the card type's definition directly, so tests can check the two agree.
func (v *Validator) ValidateWhole(card json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(card))
	if err != nil {
		return &CardError{Problems: []string{"not JSON: " + err.Error()}}
	}
	return v.check(v.schema, inst)
}
