package terminal

import "strings"

// maskTyping replaces the text the user has typed in the composer, and not sent, with
// typing; the input's further lines go. A placeholder the composer shows while empty is
// not typing and stays.
func maskTyping(lines []string, typing string) []string {
	l := newLayout(lines)
	if l.composer < 0 || l.typed == "" || placeholder(l.typed) {
		return lines
	}
	lines[l.composer] = maskLine(lines[l.composer], l.mark, typing)
	for k := len(l.more) - 1; k >= 0; k-- {
		i := l.more[k]
		lines = append(lines[:i], lines[i+1:]...)
	}
	return lines
}

// maskLine keeps line up to its prompt mark (and a box's right border) and puts typing
// where the text was.
func maskLine(line, mark, typing string) string {
	j := strings.Index(line, mark)
	if j < 0 {
		return line
	}
	tail := ""
	for _, b := range []string{"│", "┃"} {
		if t := strings.TrimSpace(line); strings.HasSuffix(t, b) && t != b {
			tail = " " + b
		}
	}
	return line[:j+len(mark)] + " " + typing + tail
}

// placeholder reports the text agents show in an empty composer.
func placeholder(text string) bool {
	switch text {
	case "Ask Codex to do anything", "Type your message or @path/to/file", "Ask anything", "Type your answer (optional)",
		"Enter your response":
		return true
	}
	return strings.HasPrefix(text, "e.g., ") || strings.HasPrefix(text, `Try "`)
}
