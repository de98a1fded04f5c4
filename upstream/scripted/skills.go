package scripted

import (
	"encoding/json"
	"strings"
	"time"
)

// A JSON skill's request is told from a chat turn's by its user prompt, as a model would
// tell them: terminal_state puts the snapshot between <terminal> lines, post_views opens
// with its template's header (docs/json-skills.md). The answer is one JSON object,
// decided from the prompt alone, so the same request always gets the same answer.
const (
	terminalOpen  = "<terminal>\n"
	terminalClose = "\n</terminal>"
	postHeader    = "[InvestPulse Extraction Prompt v1]"
)

// skillFaults are the markers of a skill request (docs/json-skills.md).
type skillFaults struct {
	fenced, invalid, schemaViolation, englishReasoning bool
	// incompleteBelow answers context_complete: false while fewer lines were sent.
	incompleteBelow int
}

// skillAnswer returns the JSON text a skill request is answered with, and false when the
// request is no skill's. The *_once markers are bad on the first request with this user
// prompt and good on the next, so a correction retry (same prompt) gets the good answer.
func (s *Server) skillAnswer(userText string, f faults) (string, bool) {
	read := postAnswer
	switch {
	case strings.Contains(userText, terminalOpen):
		read = func(prompt string, sf skillFaults) map[string]any { return terminalAnswer(terminalText(prompt), sf) }
	case strings.HasPrefix(strings.TrimSpace(userText), postHeader):
	default:
		return "", false
	}
	sf := f.skill
	for _, marker := range f.once {
		if !s.once.bad(marker, userText) {
			continue
		}
		switch marker {
		case "json_invalid_once":
			sf.invalid = true
		case "schema_violation_once":
			sf.schemaViolation = true
		case "english_reasoning_once":
			sf.englishReasoning = true
		}
	}
	return encodeAnswer(read(userText, sf), sf), true
}

// encodeAnswer writes answer as the faults ask: fenced, cut short, or plain.
func encodeAnswer(answer map[string]any, sf skillFaults) string {
	b, _ := json.Marshal(answer) // maps of strings, numbers, bools and slices always marshal
	text := string(b)
	switch {
	case sf.invalid:
		return text[:len(text)/2]
	case sf.fenced:
		return "Here is the JSON you asked for:\n```json\n" + text + "\n```\n"
	}
	return text
}

// terminalText is the snapshot between the <terminal> lines of a terminal_state prompt.
func terminalText(prompt string) string {
	_, rest, _ := strings.Cut(prompt, terminalOpen)
	body, _, _ := strings.Cut(rest, terminalClose)
	return body
}

// newSkillPlan is the plan that streams a skill's answer, with the stream faults of f
// (a stall, a mid-stream error, an abrupt close) as for a chat reply.
func (s *Server) newSkillPlan(model, text string, inputTokens int, f faults) *plan {
	p := &plan{
		respID: "resp_" + newID(), msgID: "msg_" + newID(), model: firstNonEmpty(model, "scripted"),
		createdAt: time.Now().Unix(), text: text, chunkSize: s.chunkSize, pace: s.pace,
		firstToken: f.firstToken, inputTokens: inputTokens,
	}
	p.applyStreamFaults(f)
	return p
}
