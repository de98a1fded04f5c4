package jsonskill

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/phaseflow/phaseflow/internal/schemaproblem"
)

// schemaOf reads a manifest's schema (a file name in dir, or an inline object) and compiles
// it as draft 2020-12. It returns the schema as written and compiled.
func schemaOf(fsys fs.FS, dir string, ref json.RawMessage) (json.RawMessage, *jsonschema.Schema, error) {
	raw := ref
	var name string
	if json.Unmarshal(ref, &name) == nil {
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			return nil, nil, err
		}
		raw = b
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const id = "skill-schema.json"
	if err := c.AddResource(id, doc); err != nil {
		return nil, nil, err
	}
	sch, err := c.Compile(id)
	if err != nil {
		return nil, nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, nil, err
	}
	return compact.Bytes(), sch, nil
}

// validate holds a JSON text to sch and returns the problems, none when it matches; root
// names the document in the first line of a problem about it as a whole.
func validate(sch *jsonschema.Schema, doc []byte, root string) ([]string, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("jsonskill: not JSON: %w", err)
	}
	return validateDecoded(sch, inst, root), nil
}

// validateDecoded is validate on a document decoded by jsonschema.UnmarshalJSON.
func validateDecoded(sch *jsonschema.Schema, inst any, root string) []string {
	if err := sch.Validate(inst); err != nil {
		return schemaproblem.Lines(err, root)
	}
	return nil
}

// strictUnsupported are the keywords OpenAI's strict structured outputs refuse; the output
// schema keeps them for Phaseflow's own check, which runs on every answer anyway.
func strictUnsupported() []string {
	return []string{"$schema", "$id", "title", "if", "then", "else", "allOf", "not", "minLength", "maxLength",
		"dependentRequired", "dependentSchemas"}
}

// strictSchema is the output schema as structured mode sends it: strict mode wants every
// object to name all its properties as required and allow no others, and refuses some
// keywords. A property a skill leaves optional is nullable in its schema, so the strict
// form's model answers null where the text_json form's may leave it out; both pass the
// skill's own schema.
func strictSchema(schema json.RawMessage) (json.RawMessage, error) {
	var doc map[string]any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil, err
	}
	strictify(doc)
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("strict form: %w", err)
	}
	return b, nil
}

// strictify rewrites one schema node, and the schemas below it, in place. Only keywords
// that hold schemas are walked, so a property named like a keyword is left alone.
func strictify(n map[string]any) {
	for _, k := range strictUnsupported() {
		delete(n, k)
	}
	if props, ok := n["properties"].(map[string]any); ok {
		keys := make([]string, 0, len(props))
		for k, v := range props {
			keys = append(keys, k)
			strictifyAny(v)
		}
		slices.Sort(keys)
		n["required"], n["additionalProperties"] = keys, false
	}
	if defs, ok := n["$defs"].(map[string]any); ok {
		for _, v := range defs {
			strictifyAny(v)
		}
	}
	strictifyAny(n["items"])
	for _, k := range []string{"anyOf", "oneOf"} {
		if list, ok := n[k].([]any); ok {
			for _, v := range list {
				strictifyAny(v)
			}
		}
	}
}

// strictifyAny strictifies v when it is a schema object.
func strictifyAny(v any) {
	if m, ok := v.(map[string]any); ok {
		strictify(m)
	}
}
