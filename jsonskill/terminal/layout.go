package terminal

import "strings"

// layout is where the parts of a screen are. An agent's screen ends with its input box
// (the composer, where the user types) and a footer of hints under it; above them is the
// live region, from the start of the newest history cell down, where the agent shows what
// it is doing now or asks what it needs. Everything above that is history: a spinner or a
// question there is over.
type layout struct {
	lines []string
	// chrome is the first line of the input box and footer; len(lines) when the screen has
	// no composer (a dialog has replaced it, or the agent prints a plain prompt).
	chrome int
	// composer is the composer's line, -1 when none; typed is its text (after the prompt
	// mark), and more are the input's further lines (Gemini CLI's multi-line input).
	composer int
	mark     string
	typed    string
	more     []int
	// live is the first line of the live region.
	live int
}

// liveLimit bounds how far above the composer the live region reaches.
const liveLimit = 60

// composerLimit bounds how many lines under a composer its footer may take.
const composerLimit = 12

// newLayout finds the parts of lines.
func newLayout(lines []string) layout {
	l := layout{lines: lines, chrome: len(lines), composer: -1}
	l.findComposer()
	l.live = l.liveStart()
	return l
}

// findComposer looks for the input box from the bottom: a box between two dividers whose
// first line has a prompt mark (Claude Code, Gemini CLI), else a prompt line with only
// footer hints, borders and blank lines under it (Codex's "›", the old "▌" composer,
// OpenCode's "┃" box, a plain "> " or "❯" prompt).
func (l *layout) findComposer() {
	if l.boxedComposer() {
		return
	}
	stop := max(0, len(l.lines)-composerLimit)
	for i := len(l.lines) - 1; i >= stop; i-- {
		if blank(l.lines[i]) {
			continue
		}
		if mark, typed, ok := promptLine(l.lines[i]); ok {
			l.setComposer(i, mark, typed)
			return
		}
		if !footerLine(plain(l.lines[i])) {
			return
		}
	}
}

// boxedComposer finds a composer between two dividers at the bottom ("───", "❯ text",
// further input lines, "───", then footer hints).
func (l *layout) boxedComposer() bool {
	bottom := -1
	for i := len(l.lines) - 1; i >= max(0, len(l.lines)-composerLimit); i-- {
		t := strings.TrimSpace(l.lines[i])
		if divider(t) {
			bottom = i
			break
		}
		if t != "" && !footerLine(plain(t)) {
			return false
		}
	}
	for top := bottom - 1; top >= max(0, bottom-8); top-- {
		if !divider(strings.TrimSpace(l.lines[top])) {
			continue
		}
		mark, typed, ok := promptLine(l.lines[top+1])
		if !ok || top+1 == bottom {
			return false
		}
		l.setComposer(top+1, mark, typed)
		for j := top + 2; j < bottom; j++ {
			l.more = append(l.more, j)
		}
		l.chrome = top
		return true
	}
	return false
}

// setComposer records the composer at line i; the chrome starts there, or at the divider
// or box top right above it.
func (l *layout) setComposer(i int, mark, typed string) {
	l.composer, l.mark, l.typed = i, mark, typed
	l.chrome = i
	if i > 0 && isBorder(strings.TrimSpace(l.lines[i-1])) {
		l.chrome = i - 1
	}
}

// divider reports a full-width rule of ─ or ━ (not a box's corner line).
func divider(t string) bool {
	return len(t) >= 9 && strings.Trim(t, "─━") == ""
}

// promptMarks start a composer line: Claude Code's ❯ (and > in its older box and Gemini
// CLI's), Codex's › and its older ▌ gutter, OpenCode's ┃ box.
func promptMarks() []string { return []string{"❯", ">", "›", "▌", "┃"} }

// promptLine reports a composer line: a prompt mark, then nothing or the user's text. A
// menu's selected option ("❯ 1. Yes") is a choice on screen, not typing.
func promptLine(line string) (mark, typed string, ok bool) {
	t := strings.TrimSpace(line)
	if inner, isBox := strings.CutPrefix(t, "│"); isBox { // an older Claude Code box: │ > text │
		t = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(inner), "│"))
	}
	for _, m := range promptMarks() {
		rest, found := strings.CutPrefix(t, m)
		if !found || (rest != "" && rest[0] != ' ' && m != "┃") {
			continue
		}
		rest = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), m))
		if startsNumbered(strings.TrimLeft(rest, "❯›>●▶→ ")) {
			return "", "", false
		}
		return m, rest, true
	}
	return "", "", false
}

// footerLine reports a hint line agents print under their composer: shortcuts, the mode,
// the model and folder, the context left, key hints.
func footerLine(p string) bool {
	if p == "" {
		return true
	}
	lower := strings.ToLower(p)
	for _, w := range []string{"shortcut", "context", "⏵", "shift+tab", "auto-compact", "esc", "ctrl", "⌃", "⏎",
		"enter", "send", "tokens", "help", " · ", "% "} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return (strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]")) ||
		(strings.Contains(lower, "build") && strings.Contains(lower, "plan"))
}

// liveStart finds the first line of the live region: the newest history cell's first line,
// or the line after a finished-turn mark, at most liveLimit lines above the chrome.
func (l *layout) liveStart() int {
	stop := max(0, l.chrome-liveLimit)
	for i := l.chrome - 1; i >= stop; i-- {
		p := plain(l.lines[i])
		switch {
		case finishedLine(p):
			return i + 1
		case replyLine(p):
			return i
		}
	}
	return stop
}

// region returns the live region's lines with their indexes, the chrome's after them when
// withChrome is set.
func (l *layout) region(withChrome bool) []int {
	end := l.chrome
	if withChrome {
		end = len(l.lines)
	}
	out := make([]int, 0, end-l.live)
	for i := l.live; i < end; i++ {
		out = append(out, i)
	}
	return out
}

// lastLine returns the index of the live region's last non-blank line, -1 when none.
func (l *layout) lastLine() int {
	for i := l.chrome - 1; i >= l.live; i-- {
		if !blank(l.lines[i]) {
			return i
		}
	}
	return -1
}

// footer is the chrome's text, lower-cased, for the hints a dialog puts under its input.
func (l *layout) footer() string {
	var b strings.Builder
	for _, line := range l.lines[l.chrome:] {
		b.WriteString(strings.ToLower(plain(line)))
		b.WriteByte('\n')
	}
	return b.String()
}
