package terminal

import (
	"strings"
	"unicode"
)

// busyTail is how many of the last non-empty lines Busy looks at: an agent's status line
// sits just above its input box and footer, never far from the bottom.
const busyTail = 8

// spinners are the spinner frames of seed 004's list, plus Claude Code's ✳ and · frames,
// which its screens show between the listed ones.
func spinners() string { return "✢✻✶✽✳·◐◑◒◓⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏" }

// Busy reports whether the last lines show the agent at work, and the line that shows it:
// a spinner frame followed by a status word ending in "…" or "..." ("✶ Brewing… (12s)"),
// a running hint in brackets ("(running)", "(executing)", "(loading)"), or Claude Code's
// and Codex's "esc to interrupt", shown only while they work. A context-usage bar
// ("██░░ 22%") and a finished spinner line ("✻ Worked for 12s", no ellipsis) are not
// work. Its cost is linear in the lines it looks at.
func Busy(s Snapshot) (bool, string) {
	seen := 0
	for i := len(s.Lines) - 1; i >= 0 && seen < busyTail; i-- {
		line := strings.TrimSpace(s.Lines[i])
		if line == "" {
			continue
		}
		seen++
		if busyLine(line) {
			return true, line
		}
	}
	return false, ""
}

// busyLine reports one line that shows work.
func busyLine(line string) bool {
	lower := strings.ToLower(line)
	for _, hint := range []string{"(running)", "(executing)", "(loading)", "esc to interrupt"} {
		if strings.Contains(lower, hint) {
			return true
		}
	}
	for i, r := range line {
		if strings.ContainsRune(spinners(), r) && statusWordAfter(line[i+len(string(r)):]) {
			return true
		}
	}
	return false
}

// statusWordAfter reports whether rest starts (after spaces) with a word ending in an
// ellipsis: "Brewing…", "Thinking...".
func statusWordAfter(rest string) bool {
	rest = strings.TrimLeft(rest, " ")
	end := strings.IndexFunc(rest, unicode.IsSpace)
	if end < 0 {
		end = len(rest)
	}
	word := rest[:end]
	for _, e := range []string{"…", "..."} {
		if w, ok := strings.CutSuffix(word, e); ok && w != "" && strings.IndexFunc(w, unicode.IsLetter) == 0 {
			return true
		}
	}
	return false
}
