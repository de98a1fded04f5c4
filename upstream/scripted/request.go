package scripted

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// incoming is the part of a Responses request the scripted upstream reads.
type incoming struct {
	Model        string          `json:"model"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Stream       bool            `json:"stream"`
}

// inputMessage is one input item. The API accepts content as a string or as a list of parts
// ({"type":"input_text","text":…}); both are read.
type inputMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// carryoverClose ends the carryover block the server puts before the user's text on the
// first turn of a new phase. It quotes earlier messages, markers included, so markers are
// read only from what follows it: the user's own text.
const carryoverClose = "[/CARRYOVER]"

// latestUserText returns the user's own text of the last user message of input, which is
// either a plain string (the API's shorthand for one user message) or a list of items.
func latestUserText(input json.RawMessage) string {
	return afterCarryover(latestUserMessage(input))
}

// afterCarryover drops a carryover block before the user's own text.
func afterCarryover(text string) string {
	if i := strings.LastIndex(text, carryoverClose); i >= 0 {
		return strings.TrimSpace(text[i+len(carryoverClose):])
	}
	return text
}

// latestUserMessage returns the text of the last user message of input.
func latestUserMessage(input json.RawMessage) string {
	var s string
	if json.Unmarshal(input, &s) == nil {
		return s
	}
	var items []inputMessage
	if json.Unmarshal(input, &items) != nil {
		return ""
	}
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Role == "user" {
			return contentText(items[i].Content)
		}
	}
	return ""
}

// contentText joins the text of a message's content.
func contentText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return ""
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n")
}

// estimateTokens approximates a token count the way usage dashboards do for English, four
// characters a token; it only needs to be plausible and non-zero.
func estimateTokens(texts ...string) int {
	n := 0
	for _, t := range texts {
		n += utf8.RuneCountInString(t)
	}
	return n/4 + 1
}

// chunks splits text into pieces of at most size runes, so no delta ever splits a UTF-8
// sequence.
func chunks(text string, size int) []string {
	var out []string
	for len(text) > 0 {
		i, n := 0, 0
		for i < len(text) && n < size {
			_, w := utf8.DecodeRuneInString(text[i:])
			i += w
			n++
		}
		out = append(out, text[:i])
		text = text[i:]
	}
	return out
}
