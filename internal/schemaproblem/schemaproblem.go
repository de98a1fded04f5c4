// Package schemaproblem turns a JSON Schema validation error into the lines a person (or a
// model asked to correct its answer) can act on: one per failed rule, each led by the JSON
// pointer of the offending value, "/options/0: missing property 'label'".
//
// The validator (santhosh-tekuri/jsonschema) reports a tree of causes; only its leaves say
// what to fix. They are visited in map order, so the lines are sorted: the same document
// always reads the same.
package schemaproblem

import (
	"errors"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Lines returns the problems of err, a validation error of the jsonschema package, with
// root standing for the pointer of the whole document ("" for "/"). Any other error is
// one line of its own text.
func Lines(err error, root string) []string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	printer := message.NewPrinter(language.English)
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p := Pointer(e.InstanceLocation, root) + ": " + e.ErrorKind.LocalizedString(printer)
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	walk(ve)
	slices.Sort(out)
	return out
}

// Pointer writes an instance location as a JSON pointer (RFC 6901); the document itself is
// root, or "/" when root is empty.
func Pointer(loc []string, root string) string {
	if len(loc) == 0 {
		if root == "" {
			return "/"
		}
		return root
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}
