package terminal

import (
	"regexp"
	"strings"
)

// busyLine reports one line that shows the agent at work:
//   - a spinner frame before a status that ends in an ellipsis, of one word or several
//     ("✶ Brewing…", "✳ Simplifying recompute_tangents… (2m 18s · ↓ 3.1k tokens)",
//     OpenCode's "█ Thinking...");
//   - an interrupt hint ("esc to interrupt", "ctrl+c to interrupt", OpenCode's "esc
//     interrupt" and "esc to exit cancel"), shown only while the agent works;
//   - Gemini CLI's loading line, "(esc to cancel, 12s)", cut or whole;
//   - the elapsed time and tokens of a running turn, "(9m 21s · ↓ 13.7k tokens)";
//   - docs/json-skills.md's running hints, "(running)", "(executing)", "(loading)";
//   - Aider's scanning spinner and its retry countdown.
//
// A context-usage bar ("██░░ 22%") and a finished spinner line ("✻ Worked for 12s") are
// not work. Its cost is linear in the line's length.
func busyLine(line string) bool {
	p := plain(line)
	if p == "" {
		return false
	}
	if rest, ok := spinnerLead(p); ok && statusEllipsis(rest) {
		return true
	}
	lower := strings.ToLower(p)
	for _, hint := range []string{"esc to interrupt", "ctrl+c to interrupt", "esc interrupt", "esc to exit cancel",
		"(esc to cancel, ", "(running)", "(executing)", "(loading)"} {
		if strings.Contains(lower, hint) {
			return true
		}
	}
	return strings.HasSuffix(lower, "(esc to") || turnStats.MatchString(lower) ||
		aiderSpinner(line) || aiderRetry.MatchString(p)
}

// statusEllipsis reports a status that a word ends with an ellipsis in: "Brewing…",
// "Fixing Scanner Buffer Overflow…", "Thinking...".
func statusEllipsis(rest string) bool {
	for _, e := range []string{"…", "..."} {
		if i := strings.Index(rest, e); i > 0 {
			c := rest[i-1]
			return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
		}
	}
	return false
}

// turnStats is a running turn's elapsed time and tokens in brackets.
var turnStats = regexp.MustCompile(`\(\s*\d[^)]*tokens[^)]*\)`)

// aiderRetry is Aider's countdown before it retries a refused call.
var aiderRetry = regexp.MustCompile(`^Retrying in [0-9.]+ seconds\.\.\.$`)

// aiderSpinner reports Aider's waiting spinner: a ten-column frame of spaces around one
// "░█" or "█░" pair (or the ASCII "=#"), then a space and the text.
func aiderSpinner(line string) bool {
	r := []rune(strings.TrimRight(line, " "))
	if len(r) < 12 || r[10] != ' ' {
		return false
	}
	frame := string(r[:10])
	pair := strings.TrimSpace(frame)
	return (pair == "░█" || pair == "█░" || pair == "=#" || pair == "#=") && strings.Count(frame, " ") == 8
}

// busy reports whether the live region or the footer shows work, and the line that does.
func (l *layout) busy() (bool, string) {
	for _, i := range l.region(true) {
		if busyLine(l.lines[i]) {
			return true, strings.TrimSpace(plain(l.lines[i]))
		}
	}
	return false, ""
}
