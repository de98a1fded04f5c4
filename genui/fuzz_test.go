package genui_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/phaseflow/phaseflow/genui"
)

// FuzzValidateCard feeds arbitrary bytes to the validator: it must never panic, every refusal
// must be a *CardError with at least one problem, the verdict and the problems must be the
// whole schema's (Validate goes to the card type's definition directly), and the verdict
// must not depend on the JSON's spelling (spacing, key order, escapes): re-encoding a JSON
// input keeps it.
func FuzzValidateCard(f *testing.F) {
	for _, card := range validCards() {
		f.Add([]byte(card))
	}
	f.Add([]byte(`{"type":"deployment_summary","target":"paper","deployment_status":"blocked"}`))
	f.Add([]byte(`{"type":"choice_prompt","options":[{"id":"a"}]}`))
	f.Add([]byte(`{"type":"backtest_charts","series":[{"name":"e","points":[[1e400,1]]}]}`))
	f.Add([]byte(`null`))
	v, err := genui.NewValidator()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, card []byte) {
		err := v.Validate(card)
		if err != nil {
			var ce *genui.CardError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 || !errors.Is(err, genui.ErrInvalidCard) {
				t.Fatalf("Validate(%q) = %#v, want a *CardError with problems", card, err)
			}
		}
		if whole := v.ValidateWhole(card); fmt.Sprint(whole) != fmt.Sprint(err) {
			t.Fatalf("Validate(%q) = %v, but the whole schema says %v", card, err, whole)
		}
		if !json.Valid(card) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(card))
		dec.UseNumber() // exact numbers: 1.0000000000000000001 must not become the integer 1
		var val any
		if dec.Decode(&val) != nil {
			return
		}
		again, merr := json.Marshal(val)
		if merr != nil {
			return
		}
		if err2 := v.Validate(again); (err == nil) != (err2 == nil) {
			t.Fatalf("verdict changed on re-encoding:\n%q: %v\n%q: %v", card, err, again, err2)
		}
	})
}
