// Package postprocess is step 4 of a turn: from the full forwarded text and the blocks the
// stream filter withheld, it extracts GenUI objects and the state patch, builds the tool-call
// records, validates the reply (structure and language) and assembles the metadata the
// completed event carries. It decides nothing about retries or phases; it reports.
package postprocess

import (
	"encoding/json"
	"fmt"

	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/orchestration/upstream"
)

// Options are the per-turn settings of post-processing.
type Options struct {
	Locale              string
	SerpQueriesOptional bool
}

// ToolRecord is one MCP call as persisted and sent in completed.metadata.tool_calls.
type ToolRecord struct {
	ServerLabel string          `json:"server_label"`
	Name        string          `json:"name"`
	Arguments   json.RawMessage `json:"arguments"`
	Status      string          `json:"status"` // success or failure
	Output      string          `json:"output,omitempty"`
	Error       string          `json:"error,omitempty"`
	DurationMS  int64           `json:"duration_ms"`
}

// Outcome is what post-processing found in one attempt.
type Outcome struct {
	Validation thinkingml.Result
	Language   thinkingml.LanguageResult
	ToolCalls  []ToolRecord
	GenUI      []json.RawMessage
	StatePatch json.RawMessage
	// Dropped lists what was extracted but refused (unreadable GenUI or patch), with why,
	// and each echoed session-state block or invented mcp_ tag the stream filter stripped.
	Dropped []string
}

// Problems lists why the reply must not be accepted as it is: validation errors and a
// language mismatch. Empty means acceptable.
func (o Outcome) Problems() []string {
	var out []string
	for _, e := range o.Validation.Errors {
		out = append(out, fmt.Sprintf("%s at %d:%d: %s", e.Code, e.Line, e.Column, e.Message))
	}
	if !o.Language.OK {
		out = append(out, "reply_language: "+o.Language.Reason)
	}
	return out
}

// Process post-processes one attempt's result.
func Process(res stream.Result, opts Options) Outcome {
	o := Outcome{
		Validation: thinkingml.Validate(res.Text, thinkingml.Options{SerpQueriesOptional: opts.SerpQueriesOptional}),
		Language:   thinkingml.CheckLanguage(res.Text, opts.Locale),
		ToolCalls:  ToolRecords(res.ToolCalls),
	}
	o.extractBlocks(res.Blocks)
	return o
}

// Why a block stripped from the reply is listed in [Outcome.Dropped].
const (
	droppedSessionState = "stripped an echoed session state block"
	droppedMCPTag       = "stripped an invented mcp tag"
)

// extractBlocks reads GenUI objects (an object or an array of objects, each with a type)
// and the state patch (the last patch block, a JSON object) from the withheld blocks. An
// echoed [SESSION STATE] block and an invented mcp_ tag are only recorded in Dropped: the
// filter already kept them from the client, and nothing in them is used.
func (o *Outcome) extractBlocks(blocks []thinkingml.Block) {
	for _, b := range blocks {
		switch b.Name {
		case thinkingml.BlockUIJSON:
			o.addGenUI(b.Body)
		case thinkingml.BlockSessionState:
			o.Dropped = append(o.Dropped, droppedSessionState)
		case thinkingml.BlockMCPTag:
			o.Dropped = append(o.Dropped, droppedMCPTag)
		case thinkingml.BlockStatePatch:
			var patch map[string]json.RawMessage
			if err := json.Unmarshal([]byte(b.Body), &patch); err != nil {
				o.Dropped = append(o.Dropped, "state_patch: not a JSON object: "+err.Error())
				continue
			}
			o.StatePatch = json.RawMessage(b.Body)
		}
	}
}

func (o *Outcome) addGenUI(body string) {
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(body), &items); err != nil {
		items = []json.RawMessage{json.RawMessage(body)}
	}
	for _, it := range items {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(it, &head); err != nil || head.Type == "" {
			o.Dropped = append(o.Dropped, "genui: not an object with a type")
			continue
		}
		o.GenUI = append(o.GenUI, it)
	}
}

// ToolRecords turns finished MCP calls into records: success or failure only, and a failure
// is dropped when the same tool with the same arguments later succeeded in the turn (the
// model retried it; the front end should not show an error that was mended).
func ToolRecords(calls []stream.ToolCall) []ToolRecord {
	out := make([]ToolRecord, 0, len(calls))
	for i, c := range calls {
		if c.Failed && succeededLater(calls[i+1:], c.ToolCall) {
			continue
		}
		out = append(out, record(c))
	}
	return out
}

func succeededLater(rest []stream.ToolCall, failed upstream.ToolCall) bool {
	for _, c := range rest {
		if !c.Failed && c.ServerLabel == failed.ServerLabel && c.Name == failed.Name && sameJSON(c.Arguments, failed.Arguments) {
			return true
		}
	}
	return false
}

func record(c stream.ToolCall) ToolRecord {
	r := ToolRecord{
		ServerLabel: c.ServerLabel, Name: c.Name, Arguments: rawOrString(c.Arguments),
		Status: "success", Output: c.Output, DurationMS: c.Duration.Milliseconds(),
	}
	if c.Failed {
		r.Status, r.Error = "failure", c.Error
	}
	return r
}

// rawOrString keeps arguments as JSON when they are JSON, and as a JSON string otherwise.
func rawOrString(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// sameJSON compares two argument strings as JSON values, so key order and spacing do not
// matter; strings that are not JSON compare as text.
func sameJSON(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return a == b
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}
