package scripted

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"unicode"
)

// terminalPatterns are what the scripted model looks for on a terminal screen; built per
// answer, not kept in package variables.
type terminalPatterns struct {
	option, confirm, busy *regexp.Regexp
}

func newTerminalPatterns() terminalPatterns {
	return terminalPatterns{
		// "A) Learning", "1. Portfolio", "❯ 2. Tool", "│ 3) Yes │"
		option:  regexp.MustCompile(`^[\s│|❯›>]*([A-Za-z]|[0-9]{1,2})[.)]\s+(\S.*?)[\s│|]*$`),
		confirm: regexp.MustCompile(`(?i)\[y/n\]|\(y/n\)|\by/n/a/p\b`),
		busy:    regexp.MustCompile(`(?i)[✢✻✶✽✳◐◑◒◓⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]\s*\S+(…|\.\.\.)|\((running|executing|loading)\)|esc to interrupt`),
	}
}

// terminalAnswer reads a snapshot the way docs/json-skills.md's prompt asks: busy, a question (the
// last one with no ⏺ reply after it, with the options below it), or idle. The fingerprint
// is the question's English words joined by hyphens, or a hash of it when it has none.
func terminalAnswer(snapshot string, sf skillFaults) map[string]any {
	pat := newTerminalPatterns()
	lines := strings.Split(snapshot, "\n")
	answer := map[string]any{
		"status": "idle", "context_complete": true, "message": "", "fingerprint": "",
		"message_type": "open_ended", "options": []string{}, "agent_status": "idle", "last_action": nil,
	}
	switch q, ok := lastQuestion(lines, pat); {
	case busyTail(lines, pat):
		answer["status"], answer["agent_status"] = "processing", "waiting"
	case ok:
		answer["status"], answer["agent_status"] = "has_question", "waiting"
		answer["message"], answer["fingerprint"] = q.message(), q.fingerprint()
		answer["message_type"], answer["options"] = q.kind, q.options
	default:
		answer["agent_status"] = "completed"
	}
	if sf.incompleteBelow > 0 && len(lines) < sf.incompleteBelow {
		answer["context_complete"] = false
	}
	if sf.schemaViolation {
		answer["status"] = "thinking"
	}
	return answer
}

// busyTail reports a sign of work in the last 8 non-empty lines.
func busyTail(lines []string, pat terminalPatterns) bool {
	seen := 0
	for i := len(lines) - 1; i >= 0 && seen < 8; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		seen++
		if pat.busy.MatchString(lines[i]) {
			return true
		}
	}
	return false
}

// question is a question read off the screen.
type question struct {
	text    string
	options []string
	kind    string // choice, confirmation or open_ended
}

// lastQuestion finds the last line that asks something and has no agent reply (⏺) after
// it, and the options listed below it.
func lastQuestion(lines []string, pat terminalPatterns) (question, bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(strings.Trim(lines[i], "│| "))
		if strings.HasPrefix(line, "⏺") && !asks(line, pat) {
			return question{}, false // the agent answered after whatever was asked above
		}
		if !asks(line, pat) {
			continue
		}
		q := question{text: strings.TrimSpace(strings.TrimPrefix(line, "⏺")), kind: "open_ended", options: []string{}}
		for _, below := range lines[i+1:] {
			if m := pat.option.FindStringSubmatch(below); m != nil {
				q.options = append(q.options, m[1]+") "+m[2])
			}
		}
		switch {
		case len(q.options) > 0:
			q.kind = "choice"
		case pat.confirm.MatchString(line):
			q.kind = "confirmation"
		}
		return q, true
	}
	return question{}, false
}

// asks reports a line that asks the user something.
func asks(line string, pat terminalPatterns) bool {
	return strings.HasSuffix(line, "?") || strings.HasSuffix(line, "？") || pat.confirm.MatchString(line)
}

// message formats the question as docs/json-skills.md's message rules say, in the question's words.
func (q question) message() string {
	var b strings.Builder
	b.WriteString(q.text)
	for _, o := range q.options {
		b.WriteString("\n" + o)
	}
	switch q.kind {
	case "choice":
		b.WriteString("\n\nReply with a letter/number to choose")
	case "confirmation":
		b.WriteString("\n\nReply y/n")
	default:
		b.WriteString("\n\nReply with your answer")
	}
	msg := b.String()
	if r := []rune(msg); len(r) > 500 {
		msg = string(r[:500])
	}
	return msg
}

// fingerprint is the question's English keywords joined by hyphens (at most six), or
// "q-" and a hash of its text when it has no English word.
func (q question) fingerprint() string {
	words := strings.FieldsFunc(strings.ToLower(q.text), func(r rune) bool {
		return r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r))
	})
	var keep []string
	for _, w := range words {
		if len(w) > 2 && len(keep) < 6 {
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		h := fnv.New32a()
		h.Write([]byte(q.text))
		return fmt.Sprintf("q-%08x", h.Sum32())
	}
	return strings.Join(keep, "-")
}
