// Package postprocess is step 4 of a turn (docs/turn.md): it judges replies and
// settles the kept one.
//
// [Check] is the judge the stream step asks after every attempt (ThinkingML validation and
// the reply-language rule). [Settle] takes the kept reply and returns, as values, what it
// changes and reports: the GenUI objects and the state patch extracted from the withheld
// blocks, the MCP call records (a failure dropped when the same call later succeeded), the
// patch applied to the phase's block when it keeps the phase's field rules, the phase
// handler's verdict (and the strategy it records), the GenUI with the cards the model left
// out filled in and those the phase or the schema refuse dropped, and completed.metadata.
// An invalid reply never applies a patch, records a strategy or moves a phase. The
// fallback replies (an empty reply, a stream broken after partial text) are here too.
// Nothing here writes to the database or decides about retries.
package postprocess

import (
	"encoding/json"
	"fmt"

	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// Options are the per-turn settings of the judge.
type Options struct {
	Locale              string
	SerpQueriesOptional bool
}

// Check judges a reply: every validation error and a language mismatch are issues.
func Check(text string, opts Options) stream.Check {
	c := stream.Check{Validation: thinkingml.Validate(text, thinkingml.Options{SerpQueriesOptional: opts.SerpQueriesOptional})}
	c.Issues = append(c.Issues, c.Validation.Errors...)
	lang := thinkingml.CheckLanguage(text, opts.Locale)
	c.Language = &lang
	if !lang.OK {
		c.Issues = append(c.Issues, thinkingml.Issue{Code: CodeReplyLanguage, Message: lang.Reason})
	}
	return c
}

// CodeReplyLanguage is the issue of a reply written in another language than the
// session's (docs/phases.md).
const CodeReplyLanguage thinkingml.Code = "reply_language"

// extracted is what the withheld blocks of a reply held.
type extracted struct {
	genui   []json.RawMessage
	patch   json.RawMessage
	dropped []string // what was refused (unreadable GenUI or patch) and what the filter stripped
}

// Why a block stripped from the reply is listed as dropped.
const (
	droppedSessionState = "stripped an echoed session state block"
	droppedMCPTag       = "stripped an invented mcp tag"
)

// extract reads GenUI objects (an object or an array of objects, each with a type) and the
// state patch (the last patch block, a JSON object) from the withheld blocks. An echoed
// [SESSION STATE] block and an invented mcp_ tag are only recorded: the filter already kept
// them from the client, and nothing in them is used.
func extract(blocks []thinkingml.Block) extracted {
	var x extracted
	for _, b := range blocks {
		switch b.Name {
		case thinkingml.BlockUIJSON:
			x.addGenUI(b.Body)
		case thinkingml.BlockSessionState:
			x.dropped = append(x.dropped, droppedSessionState)
		case thinkingml.BlockMCPTag:
			x.dropped = append(x.dropped, droppedMCPTag)
		case thinkingml.BlockStatePatch:
			var patch map[string]json.RawMessage
			if err := json.Unmarshal([]byte(b.Body), &patch); err != nil {
				x.dropped = append(x.dropped, "state_patch: not a JSON object: "+err.Error())
				continue
			}
			x.patch = json.RawMessage(b.Body)
		}
	}
	return x
}

func (x *extracted) addGenUI(body string) {
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(body), &items); err != nil {
		items = []json.RawMessage{json.RawMessage(body)}
	}
	for _, it := range items {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(it, &head); err != nil || head.Type == "" {
			x.dropped = append(x.dropped, "genui: not an object with a type")
			continue
		}
		x.genui = append(x.genui, it)
	}
}

// describe is one issue as metadata lists it.
func describe(i thinkingml.Issue) string {
	if i.Line > 0 {
		return fmt.Sprintf("%s at %d:%d: %s", i.Code, i.Line, i.Column, i.Message)
	}
	return fmt.Sprintf("%s: %s", i.Code, i.Message)
}
