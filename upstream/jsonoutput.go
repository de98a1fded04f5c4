package upstream

import "encoding/json"

// The output modes of a request that must answer one JSON object (docs/json-skills.md,
// docs/json-skills.md). Which one an endpoint gets is its configuration, not the caller's: the
// router stamps the endpoint's mode on [JSONOutput.Mode] before the wire client encodes it.
const (
	// JSONModeStructured sends the output schema (Chat Completions response_format,
	// Responses text.format) and lets the provider enforce it.
	JSONModeStructured = "structured"
	// JSONModeTextJSON sends no format at all and appends the skill's text-JSON hard rules
	// to the instructions: providers that refuse or ignore response_format still answer.
	JSONModeTextJSON = "text_json"
	// JSONModeAuto picks by provider: structured for OpenAI, text_json for every other.
	JSONModeAuto = "auto"
)

// ResolveJSONMode turns an endpoint's configured mode into the one it uses: auto (or
// empty) becomes structured for OpenAI and text_json elsewhere, as the original extractor
// did (OpenRouter included).
func ResolveJSONMode(mode, provider string) string {
	switch mode {
	case JSONModeStructured, JSONModeTextJSON:
		return mode
	}
	if provider == ProviderOpenAI {
		return JSONModeStructured
	}
	return JSONModeTextJSON
}

// JSONOutput asks the model for one JSON object instead of prose.
type JSONOutput struct {
	// Name names the schema (structured mode), e.g. the skill's name.
	Name string
	// Schema is the output JSON Schema sent in structured mode, with strict: true.
	Schema json.RawMessage
	// TextRules are appended to the instructions, after a space, in text_json mode.
	TextRules string
	// Mode is JSONModeStructured or JSONModeTextJSON; the router sets it per endpoint.
	// Empty counts as text_json, which every provider understands.
	Mode string
}

// ModeUsed names the mode o is sent in: JSONModeStructured or JSONModeTextJSON, or ""
// when o is nil (a prose request).
func (o *JSONOutput) ModeUsed() string {
	switch {
	case o == nil:
		return ""
	case o.structured():
		return JSONModeStructured
	}
	return JSONModeTextJSON
}

// structured reports whether o asks for the schema to be sent.
func (o *JSONOutput) structured() bool { return o != nil && o.Mode == JSONModeStructured }

// instructions are the request's instructions with the text-JSON rules appended when o
// is in text_json mode.
func (o *JSONOutput) instructions(base string) string {
	if o == nil || o.structured() || o.TextRules == "" {
		return base
	}
	if base == "" {
		return o.TextRules
	}
	return base + " " + o.TextRules
}

// jsonSchemaFormat is the strict JSON Schema format of both wires: Chat Completions nests it
// under response_format.json_schema, Responses puts it flat in text.format.
type jsonSchemaFormat struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// chatResponseFormat is Chat Completions' response_format.
type chatResponseFormat struct {
	Type       string           `json:"type"`
	JSONSchema jsonSchemaFormat `json:"json_schema"`
}

// responsesText is the Responses API's text parameter.
type responsesText struct {
	Format responsesFormat `json:"format"`
}

// responsesFormat is text.format: the type beside the schema's fields (the embedded
// struct's fields are encoded flat, as the Responses API wants them).
type responsesFormat struct {
	Type string `json:"type"`
	jsonSchemaFormat
}

// chatFormat is the response_format of o, nil unless o is structured.
func (o *JSONOutput) chatFormat() *chatResponseFormat {
	if !o.structured() {
		return nil
	}
	return &chatResponseFormat{Type: "json_schema", JSONSchema: o.schemaFormat()}
}

// responsesFormat is the text parameter of o, nil unless o is structured.
func (o *JSONOutput) responsesText() *responsesText {
	if !o.structured() {
		return nil
	}
	return &responsesText{Format: responsesFormat{Type: "json_schema", jsonSchemaFormat: o.schemaFormat()}}
}

func (o *JSONOutput) schemaFormat() jsonSchemaFormat {
	return jsonSchemaFormat{Name: o.Name, Schema: o.Schema, Strict: true}
}
