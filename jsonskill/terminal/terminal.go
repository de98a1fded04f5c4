// Package terminal prepares an AI coding agent's terminal snapshot for the terminal_state
// skill and reads what can be read without a model (seed 004 §3, §4.1).
//
// A snapshot comes from a pane capture (tmux capture-pane, a screen scraper): CRLF line
// ends, colour and cursor escape sequences, a tail of blank lines, and at the bottom the
// agent's input box, where the user may be typing a reply they have not sent. [Prepare]
// makes it the plain text a model reads: LF only, no escape sequences, no trailing blank
// lines, at most the last lines that matter, and the user's unsent text masked, so neither
// the model nor the fingerprint depends on what the user is half-way through typing.
//
// [Busy] is the rules-first answer: while the agent shows that it is working (a spinner
// before a status word that ends in an ellipsis, "(running)", "esc to interrupt"), there
// is no question to extract, and asking a model would only cost time and tokens.
// [Windows] is the widening sequence: a question that refers to something above the
// window is asked about again with more lines.
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
// after an input prompt on the last line masked with typing. Invalid UTF-8 becomes
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
	maskTyping(lines, typing)
	return Snapshot{Lines: lines}
}

// stripEscapes removes ANSI/VT escape sequences (CSI "ESC [" … final byte; OSC "ESC ]" …
// BEL or "ESC \"; DCS, SOS, PM and APC strings up to "ESC \"; two- and three-byte escapes
// such as charset selections) and every other C0 control character but tab, LF and CR.
func stripEscapes(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i)
		case c == '\t' || c == '\n' || c == '\r' || c >= 0x20 && c != 0x7f:
			b.WriteByte(c)
			i++
		default:
			i++
		}
	}
	return b.String()
}

// isControl reports a character stripEscapes removes.
func isControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f
}

// skipEscape returns the index after the escape sequence starting at s[i] (an ESC).
func skipEscape(s string, i int) int {
	i++ // ESC
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[': // CSI: parameters and intermediates (0x20-0x3f), then one final byte (0x40-0x7e)
		i++
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			i++
		}
		return i
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: a string up to BEL or ESC \
		i++
		for i < len(s) {
			switch {
			case s[i] == 0x07:
				return i + 1
			case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
				return i + 2
			case s[i] == 0x1b:
				return i // a new escape ends the broken string
			}
			i++
		}
		return i
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f { // intermediates, e.g. ESC ( B
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// promptMarks start an agent's input line: Claude Code's ❯ (and > in its older box),
// OpenCode's >, Codex's ›.
func promptMarks() []string { return []string{"❯ ", "> ", "› "} }

// maskTyping replaces the user's unsent text on the input line with typing. The input
// line is the last non-empty one, looking past the borders of an input box (│ > text │
// between ╭─╮ and ╰─╯) and one footer line under such a box ("? for shortcuts").
func maskTyping(lines []string, typing string) {
	i := len(lines) - 1
	for seen := 0; i >= 0 && seen < 4; i-- {
		line := strings.TrimSpace(lines[i])
		switch {
		case line == "":
			continue
		case isBorder(line):
			seen++
			continue
		case seen == 0 && i > 0 && isBorder(strings.TrimSpace(lines[i-1])) && !isPromptLine(line):
			seen++ // a footer under the box
			continue
		}
		if isPromptLine(line) {
			lines[i] = maskLine(lines[i], typing)
		}
		return
	}
}

// isPromptLine reports an input line holding text: a prompt mark, then something that is
// not a menu's selected option ("❯ 1. Yes" in a permission dialog is a choice on screen,
// not the user's typing).
func isPromptLine(line string) bool {
	line = strings.TrimSpace(strings.Trim(line, "│|"))
	for _, m := range promptMarks() {
		rest, ok := strings.CutPrefix(line, m)
		rest = strings.TrimSpace(rest)
		if ok && rest != "" && !isMenuOption(rest) {
			return true
		}
	}
	return false
}

// isMenuOption reports text that starts like a numbered option: "1. Yes", "2) No".
func isMenuOption(s string) bool {
	i := 0
	for i < len(s) && i < 3 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && i < len(s) && (s[i] == '.' || s[i] == ')')
}

// maskLine keeps the line up to its prompt mark (and a box's right border) and puts
// typing where the text was.
func maskLine(line, typing string) string {
	for _, m := range promptMarks() {
		if j := strings.Index(line, m); j >= 0 {
			tail := ""
			if strings.HasSuffix(strings.TrimSpace(line), "│") {
				tail = " │"
			}
			return line[:j+len(m)] + typing + tail
		}
	}
	return line
}

// isBorder reports a line drawn only with box-drawing characters (U+2500–U+257F) and
// spaces, such as an input box's top or bottom.
func isBorder(line string) bool {
	if line == "" {
		return false
	}
	for _, r := range line {
		if r != ' ' && (r < 0x2500 || r > 0x257f) {
			return false
		}
	}
	return true
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
