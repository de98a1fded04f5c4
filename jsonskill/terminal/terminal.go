// Package terminal prepares an AI coding agent's terminal snapshot for the terminal_state
// skill and reads what can be read without a model (docs/json-skills.md).
//
// A snapshot comes from a pane capture (tmux capture-pane, a screen scraper): CRLF line
// ends, colour and cursor escape sequences, a tail of blank lines, and at the bottom the
// agent's input box, where the user may be typing a reply they have not sent. [Prepare]
// makes it the plain text a model reads: LF only, no escape sequences, no trailing blank
// lines, at most the last lines that matter, and the user's unsent text masked, so neither
// the model nor the fingerprint depends on what the user is half-way through typing.
//
// [Read] is the rules' answer, cheapest first. It looks only at the live region, from the
// newest history cell down to the input box, and at the footer under the box: a question
// stated there with one certain reading (a numbered menu with a cursor, "[y/n]", Aider's
// "(Y)es/(N)o", an approval naming its command or file) is read with its options and
// subject; else a sign of work there (a spinner before a status ending in an ellipsis, an
// interrupt hint) means the agent is busy. Anything else is the model's to read.
// [Windows] is the widening sequence: a question that refers to something above the
// window is asked about again with more lines.
//
// The rules are tested on real screens of Claude Code, Codex CLI, Gemini CLI, OpenCode and
// Aider in testdata/screens, each with its source.
package terminal

import "strings"

// Snapshot is a prepared snapshot: its lines, oldest first.
type Snapshot struct {
	Lines []string
}

// Last returns the last n lines as one text (all of them when n is larger).
func (s Snapshot) Last(n int) string {
	if n > len(s.Lines) {
		n = len(s.Lines)
	}
	return strings.Join(s.Lines[len(s.Lines)-n:], "\n")
}

// Prepare turns a raw capture into a Snapshot: line ends to LF (a lone CR, a progress
// line's rewrite, keeps what was written after it), escape sequences and other control
// characters removed, trailing blank lines dropped, the last maxLines kept, and the text
// typed in the composer masked with typing (see maskTyping). Invalid UTF-8 becomes
// U+FFFD. Its cost is linear in the capture's size.
func Prepare(raw, typing string, maxLines int) Snapshot {
	text := stripEscapes(strings.ToValidUTF8(raw, "\uFFFD"))
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i, l := range lines {
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		lines[i] = strings.TrimRight(l, " \t")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if maxLines > 0 && len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	lines = maskTyping(lines, typing)
	return Snapshot{Lines: lines}
}

// Windows is the widening sequence for a snapshot of n lines: the sizes of sizes below n,
// then n itself once (a size at or past the snapshot's length sends the whole snapshot).
// A snapshot shorter than the first size is sent whole, once.
func Windows(n int, sizes []int) []int {
	var out []int
	for _, w := range sizes {
		if w >= n {
			return append(out, n)
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return []int{n}
	}
	return out
}
