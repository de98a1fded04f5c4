package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/genui"
)

var update = flag.Bool("update", false, "rewrite the generated GenUI block of openapi.yaml")

// The lines around the GenUI schemas in openapi.yaml, under components.schemas.
const (
	genUIBegin = "    # --- GenUI cards: generated from genui/schema.json by `go test ./api -run TestOpenAPIGenUI -update`; do not edit by hand ---"
	genUIEnd   = "    # --- end of the GenUI cards ---"
)

// TestOpenAPIGenUIMatchesSchema keeps the GenUI card schemas of openapi.yaml in step with
// genui/schema.json, their one source: the block between the markers must be the schema
// rendered as OpenAPI components (GenUICard, and one GenUI… schema per $defs entry, with
// the references rewritten). With -update the test rewrites the block instead.
func TestOpenAPIGenUIMatchesSchema(t *testing.T) {
	doc, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := genUIComponents(genui.Schema())
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(doc), genUIBegin+"\n")
	got, after, ok2 := strings.Cut(rest, genUIEnd+"\n")
	if !ok || !ok2 {
		t.Fatalf("openapi.yaml lacks the GenUI markers:\n%s\n%s", genUIBegin, genUIEnd)
	}
	if *update {
		if err := os.WriteFile("openapi.yaml", []byte(before+genUIBegin+"\n"+want+genUIEnd+"\n"+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Errorf("the GenUI block of openapi.yaml is stale; run go test ./api -run TestOpenAPIGenUI -update\n got:\n%s\nwant:\n%s", got, want)
	}
	for _, ref := range []string{"genui:\n          type: [array, \"null\"]\n          items:\n            $ref: \"#/components/schemas/GenUICard\""} {
		if strings.Count(string(doc), ref) != 2 {
			t.Errorf("Message.genui and CompletedMetadata.genui should both be arrays of GenUICard (%q)", ref)
		}
	}
}

// genUIComponents renders the GenUI schema as YAML lines of components.schemas (indent 4):
// the root as GenUICard without $schema, $id and $defs, then each $defs entry. Two of the
// schema's forms are written so that code generators can type them, with the same cards
// valid: the root's chain of if/then on the card's type becomes oneOf the card types with a
// discriminator on type (a generated GenUICard narrows on card.type), and an anyOf that
// only lists required sets (a choice prompt asks a question or names missing fields)
// becomes x-required-any-of, a rule generators cannot type (they turned the whole card into
// unknown); the server checks every card against genui/schema.json itself.
func genUIComponents(schema []byte) (string, error) {
	root, err := parseOrdered(json.NewDecoder(bytes.NewReader(schema)))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var defs *node
	card := &node{kind: '{'}
	for i, k := range root.keys {
		switch k {
		case "$schema", "$id", "properties", "required", "type":
		case "$defs":
			defs = root.vals[i]
		case "allOf":
			variants, err := cardVariants(root.vals[i])
			if err != nil {
				return "", err
			}
			card.keys = append(card.keys, "oneOf", "discriminator")
			card.vals = append(card.vals, variants.oneOf, variants.discriminator)
		default:
			card.keys, card.vals = append(card.keys, k), append(card.vals, root.vals[i])
		}
	}
	if defs == nil {
		return "", errors.New("schema has no $defs")
	}
	writeComponent(&b, "GenUICard", card)
	for i, k := range defs.keys {
		writeComponent(&b, componentName(k), requiredAnyOf(defs.vals[i]))
	}
	return b.String(), nil
}

// variants are the root's card types as oneOf and its discriminator.
type variants struct{ oneOf, discriminator *node }

// cardVariants reads the root's allOf of {if: {properties: {type: {const: T}}}, then: {$ref}}.
func cardVariants(allOf *node) (variants, error) {
	oneOf := &node{kind: '['}
	mapping := &node{kind: '{'}
	for _, branch := range allOf.vals {
		cond, then := branch.get("if"), branch.get("then")
		ref := then.get("$ref")
		typ := cond.get("properties").get("type").get("const")
		if ref == nil || typ == nil {
			return variants{}, errors.New("the root's allOf is not if type = T then $ref")
		}
		oneOf.vals = append(oneOf.vals, &node{kind: '{', keys: []string{"$ref"}, vals: []*node{ref}})
		var name string
		if err := json.Unmarshal([]byte(typ.scalar), &name); err != nil {
			return variants{}, err
		}
		mapping.keys, mapping.vals = append(mapping.keys, name), append(mapping.vals, ref)
	}
	discriminator := &node{kind: '{', keys: []string{"propertyName", "mapping"},
		vals: []*node{{kind: 's', scalar: `"type"`}, mapping}}
	return variants{oneOf: oneOf, discriminator: discriminator}, nil
}

// requiredAnyOf renames an anyOf whose members only list required properties.
func requiredAnyOf(def *node) *node {
	for i, k := range def.keys {
		if k != "anyOf" {
			continue
		}
		for _, m := range def.vals[i].vals {
			if len(m.keys) != 1 || m.keys[0] != "required" {
				return def
			}
		}
		out := *def
		out.keys = append([]string(nil), def.keys...)
		out.keys[i] = "x-required-any-of"
		return &out
	}
	return def
}

// get is the value of an object's key, nil when n is not an object or lacks it.
func (n *node) get(key string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// componentName maps a $defs name to its component: strategy_card → GenUIStrategyCard.
func componentName(def string) string {
	var b strings.Builder
	b.WriteString("GenUI")
	for _, part := range strings.Split(def, "_") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

var defRef = regexp.MustCompile(`^"#/\$defs/([a-z_]+)"$`)

func writeComponent(b *strings.Builder, name string, n *node) {
	b.WriteString("    " + name + ":\n")
	writeYAML(b, n, 6)
}

// node is a JSON value that keeps its object keys in document order.
type node struct {
	kind   byte // '{', '[' or 's' (scalar)
	keys   []string
	vals   []*node
	scalar string // the value as JSON text
}

func parseOrdered(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		n := &node{kind: byte(tok)}
		for dec.More() {
			if n.kind == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			v, err := parseOrdered(dec)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		_, err := dec.Token() // the closing delimiter
		return n, err
	default:
		return &node{kind: 's', scalar: jsonText(tok)}, nil
	}
}

// jsonText writes a scalar as JSON, which is also a valid YAML flow scalar.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// inline reports whether n is written on its key's line: a scalar, an empty container, or
// an array of scalars (as a flow sequence).
func inline(n *node) (string, bool) {
	switch {
	case n.kind == 's':
		if m := defRef.FindStringSubmatch(n.scalar); m != nil {
			return `"#/components/schemas/` + componentName(m[1]) + `"`, true
		}
		return n.scalar, true
	case len(n.vals) == 0 && n.kind == '{':
		return "{}", true
	case len(n.vals) == 0:
		return "[]", true
	case n.kind == '[':
		parts := make([]string, len(n.vals))
		for i, v := range n.vals {
			if v.kind != 's' {
				return "", false
			}
			parts[i] = v.scalar
		}
		return "[" + strings.Join(parts, ", ") + "]", true
	}
	return "", false
}

// writeYAML writes a container in block style at indent.
func writeYAML(b *strings.Builder, n *node, indent int) {
	pad := strings.Repeat(" ", indent)
	for i, v := range n.vals {
		lead := pad + "- "
		if n.kind == '{' {
			lead = pad + n.keys[i] + ":"
		}
		if s, ok := inline(v); ok {
			fmt.Fprintf(b, "%s %s\n", strings.TrimRight(lead, " "), s)
			continue
		}
		if n.kind == '[' && v.kind == '{' {
			// "- key: value" with the item's other keys under its first.
			var item strings.Builder
			writeYAML(&item, v, indent+2)
			b.WriteString(pad + "- " + item.String()[indent+2:])
			continue
		}
		b.WriteString(strings.TrimRight(lead, " ") + "\n")
		writeYAML(b, v, indent+2)
	}
}
