package thinkingml

import (
	"bytes"
	"encoding/json"
)

// Code names one kind of problem. Codes are stable: clients and scripts match on them, so a
// code is never renamed, only added.
type Code string

// Error codes (docs/thinkingml.md). Any of them makes a reply invalid.
const (
	CodeEmptyReply            Code = "empty_reply"
	CodeModelParsingError     Code = "model_parsing_error"
	CodeMalformedXML          Code = "malformed_xml"
	CodeTextOutsideElements   Code = "text_outside_elements"
	CodeTagNotAllowed         Code = "tag_not_allowed"
	CodeAttributeNotAllowed   Code = "attribute_not_allowed"
	CodeNestedTagNotAllowed   Code = "nested_tag_not_allowed"
	CodeDuplicateElement      Code = "duplicate_element"
	CodeOrderViolation        Code = "order_violation"
	CodeMissingThinking       Code = "missing_thinking"
	CodeMissingFinal          Code = "missing_final"
	CodeFinalNotAfterThinking Code = "final_not_after_thinking"
	CodeThinkingWithoutPhase  Code = "thinking_without_phase"
	CodePhaseIDInvalid        Code = "phase_id_invalid"
	CodePhaseIDNotIncreasing  Code = "phase_id_not_increasing"
	CodePhaseTitleMissing     Code = "phase_title_missing"
	CodePhaseTitleDuplicate   Code = "phase_title_duplicate"
	CodePhaseTitleNotFirst    Code = "phase_title_not_first"
	CodeSerpQueriesMissing    Code = "serp_queries_missing"
	CodeSerpQueriesNotLast    Code = "serp_queries_not_last"
	CodeSerpQueriesFormat     Code = "serp_queries_format"
	CodeSerpQueriesJSON       Code = "serp_queries_json"
	CodeSerpQueriesTooMany    Code = "serp_queries_too_many"
	CodeSerpQueriesDuplicate  Code = "serp_queries_duplicate"
	CodeSerpQueriesTooLong    Code = "serp_queries_too_long"
	CodeSerpQueriesSensitive  Code = "serp_queries_sensitive"
)

// ErrorCodes lists every error code, in the order of docs/thinkingml.md, so that texts keyed
// by code (the correction note's explanations in package skills) can be checked for
// completeness.
func ErrorCodes() []Code {
	return []Code{
		CodeEmptyReply, CodeModelParsingError, CodeMalformedXML, CodeTextOutsideElements, CodeTagNotAllowed,
		CodeAttributeNotAllowed, CodeNestedTagNotAllowed, CodeDuplicateElement, CodeOrderViolation,
		CodeMissingThinking, CodeMissingFinal, CodeFinalNotAfterThinking, CodeThinkingWithoutPhase,
		CodePhaseIDInvalid, CodePhaseIDNotIncreasing, CodePhaseTitleMissing, CodePhaseTitleDuplicate,
		CodePhaseTitleNotFirst, CodeSerpQueriesMissing, CodeSerpQueriesNotLast, CodeSerpQueriesFormat,
		CodeSerpQueriesJSON, CodeSerpQueriesTooMany, CodeSerpQueriesDuplicate, CodeSerpQueriesTooLong,
		CodeSerpQueriesSensitive,
	}
}

// Warning codes. A warning never makes a reply invalid; it points at something a prompt
// author may want to look at.
const (
	CodeSerpQueriesEmpty        Code = "serp_queries_empty"
	CodeCommentOutsideSerpBlock Code = "comment_outside_serp_block"
)

// Options tune [Validate] for a deployment. The zero value is the strict default.
type Options struct {
	// SerpQueriesOptional switches off the requirement that <final> end with the serp
	// queries block. A block that is present is still checked.
	SerpQueriesOptional bool
}

// Result is the outcome of [Validate], shaped as docs/thinkingml.md so that the library, the
// command and the HTTP endpoint all answer the same object.
type Result struct {
	Valid    bool    `json:"valid"`
	Errors   []Issue `json:"errors"`
	Warnings []Issue `json:"warnings"`
	Summary  Summary `json:"summary"`
}

// Issue is one problem found in a reply. Line and Column are 1-based and count Unicode code
// points of the validated text, so an editor can jump to the spot whatever the script.
type Issue struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
}

// Summary describes what the reply holds, valid or not, for metadata and dashboards.
type Summary struct {
	// Phases is the number of <phase> elements in <thinking>.
	Phases int `json:"phases"`
	// HasThink and HasSerp say whether the optional <think> and <serp> elements are present.
	HasThink bool `json:"has_think"`
	HasSerp  bool `json:"has_serp"`
	// SerpQueries are the queries of the serp block at the end of <final>, when it could
	// be read.
	SerpQueries []string `json:"serp_queries"`
	// FinalChars counts the code points of <final>'s Markdown: its content without the serp
	// queries block, trimmed of surrounding white space.
	FinalChars int `json:"final_chars"`
}

// MarshalJSON writes empty lists as [] rather than null, which the contract promises
// clients, even for a Result not built by [Validate].
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	if p.Errors == nil {
		p.Errors = []Issue{}
	}
	if p.Warnings == nil {
		p.Warnings = []Issue{}
	}
	return marshalRaw(p)
}

// MarshalJSON writes serp_queries as [] rather than null when there are none.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	p := plain(s)
	if p.SerpQueries == nil {
		p.SerpQueries = []string{}
	}
	return marshalRaw(p)
}

// marshalRaw encodes v without HTML escaping, leaving that choice to the caller's encoder
// (json.Marshal escapes the output of a MarshalJSON method again; an Encoder with
// SetEscapeHTML(false) keeps "<final>" readable).
func marshalRaw(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
