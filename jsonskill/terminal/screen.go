package terminal

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// plain is a line as a reader sees it: without the borders and gutters agents draw around
// text (│ … │ boxes, nested ones too, OpenCode's ┃, Codex's ▌ gutter), trimmed.
func plain(line string) string {
	s := strings.TrimSpace(line)
	for range 3 {
		t := s
		for _, b := range []string{"│", "┃", "▌", "▏"} {
			t = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(t, b), b))
		}
		if t == s {
			break
		}
		s = t
	}
	return s
}

// isBorder reports a line drawn only with box-drawing and block characters (U+2500–U+259F)
// and spaces, at least two of them: a box's top or bottom, a divider, Gemini's ▀▀▀ rule.
func isBorder(line string) bool {
	n := 0
	for _, r := range line {
		switch {
		case r == ' ':
		case r >= 0x2500 && r <= 0x259f:
			n++
		default:
			return false
		}
	}
	return n >= 2
}

// blank reports a line with nothing to read: empty once its borders go, or a scroll arrow.
func blank(line string) bool {
	p := plain(line)
	return p == "" || p == "▲" || p == "▼" || isBorder(strings.TrimSpace(line))
}

// spinnerRunes are the frames agents draw before a status while they work: docs/json-skills.md's list,
// Claude Code's other frames (✳ ✱ … · ∙), braille dots (Gemini CLI, OpenCode, cli-spinners)
// and OpenCode's pulse blocks.
const spinnerRunes = "✢✣✤✥✧✱✲✳✴✵✶✷✸✹✺✻✼✽✾✿❀❁❂❃❇❈❉❊❋·∙⋅◐◑◒◓⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏█▓▒░"

// spinnerLead reports a line that starts with a spinner frame and a space, and the rest.
func spinnerLead(p string) (string, bool) {
	r, n := utf8.DecodeRuneInString(p)
	if r == utf8.RuneError || !strings.ContainsRune(spinnerRunes, r) || !strings.HasPrefix(p[n:], " ") {
		return "", false
	}
	return strings.TrimSpace(p[n:]), true
}

// finishedLine reports a spinner frame followed by "<Verb>ed for <duration>" ("✻ Worked
// for 8s", "✻ Brewed for 2m 12s · 2 shells still running"): Claude Code's mark that a turn
// ended. Work shown above it is over.
func finishedLine(p string) bool {
	rest, ok := spinnerLead(p)
	if !ok {
		return false
	}
	word, after, ok := strings.Cut(rest, " for ")
	return ok && word != "" && !strings.ContainsFunc(word, func(r rune) bool { return !unicode.IsLetter(r) }) &&
		after != "" && after[0] >= '0' && after[0] <= '9'
}

// replyMarks start a history cell: a reply or a tool call (Claude Code's ⏺ and ●, Codex's •,
// Gemini CLI's ✦, Codex's ■ notice).
const replyMarks = "⏺●•✦■"

// replyLine reports a line that opens a history cell. A menu's selected option ("● 1. Allow
// once") is not one, nor Codex's queue of messages, which belongs to the live region.
func replyLine(p string) bool {
	r, n := utf8.DecodeRuneInString(p)
	if !strings.ContainsRune(replyMarks, r) || !strings.HasPrefix(p[n:], " ") {
		return false
	}
	rest := strings.TrimSpace(p[n:])
	return !startsNumbered(rest) && !strings.HasPrefix(rest, "Messages to be submitted")
}

// startsNumbered reports text that starts like a numbered or lettered option: "1. Yes",
// "2) No", "B) Start fresh".
func startsNumbered(s string) bool {
	if len(s) >= 3 && (s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z') && s[1] == ')' && s[2] == ' ' {
		return true
	}
	i := 0
	for i < len(s) && i < 3 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')')
}

// indent is the number of leading spaces of a line (after a box's left border).
func indent(line string) int {
	s := strings.TrimLeft(line, " ")
	for _, b := range []string{"│", "┃", "▌"} {
		if rest, ok := strings.CutPrefix(s, b); ok {
			return indent(rest)
		}
	}
	return len(line) - len(s)
}
