package genui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/phaseflow/phaseflow/internal/schemaproblem"
)

// ErrInvalidCard is what every refusal of [Validate] matches with errors.Is.
var ErrInvalidCard = errors.New("genui: invalid card")

// CardError says why a card was refused, in words a person can act on: the card's type (""
// when it has none) and one problem per failed rule, each led by the JSON pointer of the
// offending value ("/options/0: missing property 'label'").
type CardError struct {
	Type     string
	Problems []string
}

// Error is one line: the type, then the problems separated by "; ".
func (e *CardError) Error() string {
	what := "genui card"
	if e.Type != "" {
		what = "genui " + e.Type + " card"
	}
	return what + " does not match the schema: " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrInvalidCard) true.
func (e *CardError) Is(target error) bool { return target == ErrInvalidCard }

// Validator checks cards against the compiled schema. It is safe for concurrent use.
type Validator struct {
	schema *jsonschema.Schema
	// byType holds each card type's own definition ($defs/<type>). The schema's root only
	// checks that a card is an object with a known type, then applies that type's
	// definition through nine if/then branches; a card whose type is known is held to its
	// definition directly, with the same verdict and problems, in less than half the time.
	byType map[string]*jsonschema.Schema
}

// NewValidator compiles the embedded schema. It fails only if the embedded document is
// broken, which the package's tests rule out.
func NewValidator() (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("genui: read schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(SchemaID, doc); err != nil {
		return nil, fmt.Errorf("genui: add schema: %w", err)
	}
	sch, err := c.Compile(SchemaID)
	if err != nil {
		return nil, fmt.Errorf("genui: compile schema: %w", err)
	}
	byType := make(map[string]*jsonschema.Schema, len(Types()))
	for _, typ := range Types() {
		if byType[typ], err = c.Compile(SchemaID + "#/$defs/" + typ); err != nil {
			return nil, fmt.Errorf("genui: compile schema of %s: %w", typ, err)
		}
	}
	return &Validator{schema: sch, byType: byType}, nil
}

// Validate returns nil when card is a JSON object matching the schema, else a *[CardError].
func (v *Validator) Validate(card json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(card))
	if err != nil {
		return &CardError{Problems: []string{"not JSON: " + err.Error()}}
	}
	sch := v.schema
	if def := v.byType[typeOf(inst)]; def != nil {
		sch = def
	}
	return v.check(sch, inst)
}

// check holds inst to sch.
func (v *Validator) check(sch *jsonschema.Schema, inst any) error {
	err := sch.Validate(inst)
	if err == nil {
		return nil
	}
	return &CardError{Type: typeOf(inst), Problems: schemaproblem.Lines(err, "(card)")}
}

// Validate checks one card with a fresh [Validator]. Compiling the schema costs a
// few milliseconds (see BenchmarkValidate); code that checks many cards keeps a Validator.
func Validate(card json.RawMessage) error {
	v, err := NewValidator()
	if err != nil {
		return err
	}
	return v.Validate(card)
}

// typeOf returns the card's type when it is an object with a string type.
func typeOf(inst any) string {
	obj, _ := inst.(map[string]any)
	typ, _ := obj["type"].(string)
	return typ
}
