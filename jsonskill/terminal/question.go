package terminal

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is a question's type, as the terminal_state skill names it.
type Kind string

// The kinds of question.
const (
	KindChoice       Kind = "choice"
	KindConfirmation Kind = "confirmation"
	KindOpen         Kind = "open_ended"
)

// Option is one answer a question offers, and the keys that choose it on the agent's
// screen (tmux key names: "2", "y", "Enter", "Right").
type Option struct {
	Label string   `json:"label"`
	Keys  []string `json:"keys"`
}

// Question is a question the screen states with one certain reading.
type Question struct {
	Kind Kind
	// Text is the question as the agent words it.
	Text string
	// Subject is what waits for approval: a command, a file, an address; "" when the
	// question names none.
	Subject string
	Options []Option
	// Rule names the rule that read it: "menu", "yes_no", "permission" or "input".
	Rule string
}

// question reads the question at the bottom of the live region. ok reports a question
// read with certainty; seen reports a question on screen that the rules cannot read
// whole (the model reads it; the agent is waiting, whatever hint is left on screen).
func (l *layout) question() (q Question, ok, seen bool) {
	if q, ok, seen = l.permission(); seen {
		return q, ok, seen
	}
	if q, ok, seen = l.menu(); seen {
		return q, ok, seen
	}
	if q, ok = l.yesNo(); ok {
		return q, true, true
	}
	if q, ok = l.input(); ok {
		return q, true, true
	}
	return Question{}, false, false
}

// option is one parsed menu line.
type option struct {
	num    int
	key    string // what is typed to choose it: its number or letter
	label  string
	cursor bool
	radio  bool
}

var (
	numbered = regexp.MustCompile(`^([❯›>●▶→◉]\s*)?(\d{1,2}|[A-Za-z])[.)]\s+(.+)$`)
	radio    = regexp.MustCompile(`^(\(\s?\)|\([x•*]\)|\[\s?\]|\[[x✓]\])\s+(.+)$`)
	// shortcut is a key hint after an option's label: "(y)", "(esc)", "(shift+tab)".
	shortcut = regexp.MustCompile(`\s*\((?:esc|tab|enter|shift\+tab|ctrl\+\w+|[a-zA-Z])\)$`)
)

// parseOption reads a menu line: "❯ 1. Yes", "  2.  JWT tokens", "( ) Option 1  First
// choice.". The label ends at a run of two spaces (a description column follows).
func parseOption(line string) (option, bool) {
	p := plain(line)
	var o option
	if m := numbered.FindStringSubmatch(p); m != nil {
		o.key, o.cursor, o.label = m[2], m[1] != "", m[3]
		o.num, _ = strconv.Atoi(m[2])
		if o.num == 0 { // a lettered option: A is 1
			o.num = int(unicode.ToUpper(rune(m[2][0]))-'A') + 1
		}
	} else if m := radio.FindStringSubmatch(p); m != nil {
		o.radio, o.label = true, m[2]
	} else {
		return o, false
	}
	if i := strings.Index(o.label, "  "); i > 0 {
		o.label = o.label[:i]
	}
	o.label = strings.TrimSpace(shortcut.ReplaceAllString(strings.TrimSpace(o.label), ""))
	return o, o.label != ""
}

// menu reads a numbered or radio menu at the bottom of the live region, with the question
// above it. A menu needs a selection cursor (or radio buttons), options numbered from 1,
// and nothing but hints under it.
func (l *layout) menu() (Question, bool, bool) {
	end := l.lastLine()
	for end >= l.live && hintLine(plain(l.lines[end])) {
		end--
	}
	opts, start := l.options(end)
	if len(opts) < 2 {
		return Question{}, false, false
	}
	q := Question{Kind: KindChoice, Rule: "menu"}
	for _, o := range opts {
		q.Options = append(q.Options, Option{Label: o.label, Keys: []string{o.key}})
	}
	block := l.block(start)
	q.Text = questionText(block)
	if q.Text == "" {
		return Question{}, false, true
	}
	q.Subject = subject(block, q.Text)
	return q, true, true
}

// options collects the menu ending at line end (options and their indented descriptions),
// returning them in order and the menu's first line; nil unless it is a whole menu.
func (l *layout) options(end int) ([]option, int) {
	var opts []option
	start := end
	for i := end; i >= l.live; i-- {
		if o, ok := parseOption(l.lines[i]); ok {
			opts = append([]option{o}, opts...)
			start = i
			continue
		}
		if blank(l.lines[i]) && len(opts) == 0 || indent(l.lines[i]) >= 5 && !blank(l.lines[i]) {
			continue // a description under an option
		}
		break
	}
	cursor := false
	for k := range opts {
		if opts[k].radio {
			opts[k].num, opts[k].key, cursor = k+1, strconv.Itoa(k+1), true
		}
		cursor = cursor || opts[k].cursor
		if opts[k].num != k+1 {
			return nil, start
		}
	}
	if !cursor {
		return nil, start
	}
	return opts, start
}

// hintLine reports a dialog's key hints under its options ("Press enter to confirm or
// esc to cancel", "Enter to select · ↑/↓ to navigate · Esc to cancel").
func hintLine(p string) bool {
	if p == "" || p == "▲" || p == "▼" {
		return true
	}
	lower := strings.ToLower(p)
	for _, w := range []string{"enter to", "esc to", "press enter", "↑/↓", "⇆ select", "↔ select", "no option selected", "tab to amend"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// blockLimit bounds how far above a menu its question and subject are looked for.
const blockLimit = 20

// block returns the plain lines above line start that belong to its dialog: up to the
// live region's start, a history cell, or the user's prompt.
func (l *layout) block(start int) []string {
	var out []string
	for i := start - 1; i >= max(l.live, start-blockLimit); i-- {
		p := plain(l.lines[i])
		if userLine(l.lines[i]) || replyLine(p) {
			break // the user's message, or a history cell: the dialog starts below it
		}
		if isBorder(strings.TrimSpace(l.lines[i])) {
			p = "" // a box's edge separates like a blank line
			if strings.ContainsAny(l.lines[i], "╭╰┌└") {
				p = boxEdge
			}
		}
		out = append([]string{p}, out...)
	}
	return out
}

// userLine reports a line holding the user's message after a prompt mark ("> fix it",
// "❯ fix it"); the gutters ▌ and ┃ also frame an agent's dialogs, so they do not count.
func userLine(line string) bool {
	mark, typed, ok := promptLine(line)
	return ok && typed != "" && mark != "▌" && mark != "┃"
}

// boxEdge stands for a box's top or bottom in a block, where subject reads a box's text.
const boxEdge = "\x00box"

// questionText finds the question in a dialog's lines: Codex's "Question i/n" form (its
// header and text), else the last sentence ending in "?" (a line cut by the box joined to
// the one before), else the last line ending in ":", else the title of a short dialog
// (its first line). "" when none reads with certainty.
func questionText(block []string) string {
	lines := make([]string, 0, len(block))
	for _, b := range block {
		if b != boxEdge {
			lines = append(lines, b)
		}
	}
	if q := codexQuestion(lines); q != "" {
		return q
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasSuffix(lines[i], "?") {
			return lastSentence(joinWrapped(lines, i))
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasSuffix(lines[i], ":") {
			return lines[i]
		}
	}
	var text []string
	for _, s := range lines {
		if s != "" {
			text = append(text, s)
		}
	}
	if len(text) > 0 && len(text) <= 3 {
		return text[0]
	}
	return ""
}

var codexHeader = regexp.MustCompile(`^Question \d+/\d+`)

// codexQuestion reads Codex's request_user_input form: "Question 1/2 (…)", a header, the
// question's text; it reads "Header: text".
func codexQuestion(lines []string) string {
	for i, s := range lines {
		if !codexHeader.MatchString(s) {
			continue
		}
		var parts []string
		for _, t := range lines[i+1:] {
			if t == "" {
				break
			}
			parts = append(parts, t)
		}
		if len(parts) == 0 {
			return ""
		}
		if len(parts) == 1 {
			return parts[0]
		}
		return parts[0] + ": " + strings.Join(parts[1:], " ")
	}
	return ""
}

// joinWrapped returns line i joined with the lines above it that the box wrapped it from:
// a line that starts in lower case continues the one before.
func joinWrapped(lines []string, i int) string {
	s := lines[i]
	for i > 0 && lines[i-1] != "" && startsLower(s) {
		i--
		s = lines[i] + " " + s
	}
	return s
}

func startsLower(s string) bool {
	for _, r := range s {
		return unicode.IsLower(r)
	}
	return false
}

// lastSentence is the last sentence of s: the text after the last ". " before its end.
func lastSentence(s string) string {
	if i := strings.LastIndex(s[:len(s)-1], ". "); i >= 0 {
		return s[i+2:]
	}
	return s
}

var (
	// yesNoLetters is Aider's "(Y)es/(N)o/(D)on't ask again [Yes]:" and the like.
	yesNoLetters = regexp.MustCompile(`\(([A-Za-z])\)([A-Za-z' ]*)`)
	aiderPrompt  = regexp.MustCompile(`\(([A-Za-z])\)[a-z]+(/[^\s:]*[^:]*)?\s*(\[[A-Za-z]+\])?:$`)
	bracketYN    = regexp.MustCompile(`(?i)[\[(]y/n(/[a-z]+)*[\])]:?$`)
	spelledYN    = regexp.MustCompile(`(?i)yes \(y\) / no \(n\)$`)
)

// yesNo reads a confirmation on the live region's last line: Aider's lettered choices,
// "[y/n]", "(y/n/instructions):", "yes (y) / no (n)".
func (l *layout) yesNo() (Question, bool) {
	i := l.lastLine()
	if i < 0 {
		return Question{}, false
	}
	p := plain(l.lines[i])
	q := Question{Kind: KindConfirmation, Rule: "yes_no"}
	var at int
	switch {
	case aiderPrompt.MatchString(p):
		at = strings.Index(p, "(")
		for _, m := range yesNoLetters.FindAllStringSubmatch(p[at:], -1) {
			label := strings.TrimSpace(strings.ToUpper(m[1]) + m[2])
			q.Options = append(q.Options, Option{Label: label, Keys: []string{strings.ToLower(m[1]), "Enter"}})
		}
		if len(q.Options) > 2 {
			q.Kind = KindChoice
		}
	case bracketYN.MatchString(p):
		at = bracketYN.FindStringIndex(p)[0]
		q.Options = yesNoOptions("Enter")
	case spelledYN.MatchString(p):
		at = spelledYN.FindStringIndex(p)[0]
		q.Options = yesNoOptions()
	default:
		return Question{}, false
	}
	q.Text = strings.TrimSpace(p[:at])
	if r, n := utf8.DecodeRuneInString(q.Text); strings.ContainsRune(replyMarks, r) {
		q.Text = strings.TrimSpace(q.Text[n:]) // the agent's reply ends in the question
	}
	above := i - 1
	for above >= l.live && blank(l.lines[above]) {
		above--
	}
	if q.Text == "" && above >= l.live {
		q.Text, above = plain(l.lines[above]), above-1
	}
	if q.Text == "" {
		return Question{}, false
	}
	if above >= l.live && aiderSubject(q.Text) {
		q.Subject = strings.TrimPrefix(plain(l.lines[above]), ">")
	}
	return q, true
}

// yesNoOptions are Yes and No, typed as y and n (then the keys after).
func yesNoOptions(then ...string) []Option {
	return []Option{{Label: "Yes", Keys: append([]string{"y"}, then...)}, {Label: "No", Keys: append([]string{"n"}, then...)}}
}

// aiderSubject reports Aider's questions that print their subject (a file, a command, an
// address) on the line above.
func aiderSubject(text string) bool {
	for _, p := range []string{"Add file", "Create new file", "Run shell command", "Add URL"} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// permission reads OpenCode's approval: "△ Permission required", the tool's title, its
// body ("$ command"), then either a row of buttons ("Allow once   Allow always   Reject",
// chosen with → and Enter) or "Press Enter to allow, Esc to deny".
func (l *layout) permission() (Question, bool, bool) {
	at := -1
	for i := l.live; i < len(l.lines); i++ {
		if strings.Contains(plain(l.lines[i]), "△ Permission required") {
			at = i
		}
	}
	if at < 0 {
		return Question{}, false, false
	}
	q := Question{Kind: KindChoice, Rule: "permission"}
	for i := at + 1; i < len(l.lines); i++ {
		p := plain(l.lines[i])
		switch {
		case p == "" || hintLine(p) && !strings.Contains(strings.ToLower(p), "to allow"):
		case strings.Contains(p, "Allow once") && strings.Contains(p, "Reject"):
			for k, label := range buttons(p) {
				keys := append(repeat("Right", k), "Enter")
				q.Options = append(q.Options, Option{Label: label, Keys: keys})
			}
		case strings.Contains(strings.ToLower(p), "enter to allow"):
			q.Kind = KindConfirmation
			q.Options = []Option{{Label: "Allow", Keys: []string{"Enter"}}, {Label: "Deny", Keys: []string{"Escape"}}}
		case q.Text == "":
			q.Text = stripIcon(p)
		case strings.HasPrefix(p, "$ "):
			q.Subject = strings.TrimSpace(p[2:])
		}
	}
	if q.Subject == "" {
		q.Subject = titleSubject(q.Text)
	}
	if q.Text == "" || len(q.Options) == 0 {
		return Question{}, false, true
	}
	return q, true, true
}

// buttons splits a row of buttons: "Allow once   Allow always   Reject" or "[ Allow once ]
// [ Allow always ] [ Reject ]".
func buttons(p string) []string {
	p = strings.NewReplacer("[", "  ", "]", "  ").Replace(p)
	var out []string
	for _, f := range regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(p), -1) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

func repeat(key string, n int) []string {
	out := make([]string, 0, n+1)
	for range n {
		out = append(out, key)
	}
	return out
}

// stripIcon drops the tool icon OpenCode puts before a permission's title ("# Shell
// command", "→ Edit src/x.ts").
func stripIcon(p string) string {
	for _, icon := range []string{"#", "→", "←", "✱", "%", "◈", "◇", "⟳", "⚙"} {
		if rest, ok := strings.CutPrefix(p, icon+" "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return p
}

// titleSubject is the path or address in a permission's title: "Edit src/x.ts" → src/x.ts.
func titleSubject(title string) string {
	for _, verb := range []string{"Edit ", "Read ", "List ", "WebFetch ", "Access external directory "} {
		if rest, ok := strings.CutPrefix(title, verb); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// input reads an open question with an answer field: Codex's form ("Question 1/1", its
// text, "Enter to submit answer") or Gemini CLI's ("What should we name this component?",
// a field, "Enter to submit").
func (l *layout) input() (Question, bool) {
	if !strings.Contains(l.footer(), "enter to submit") {
		return Question{}, false
	}
	var lines []string
	for _, i := range l.region(false) {
		lines = append(lines, plain(l.lines[i]))
	}
	q := Question{Kind: KindOpen, Rule: "input", Text: codexQuestion(lines)}
	if i := l.lastLine(); q.Text == "" && i >= 0 && strings.HasSuffix(plain(l.lines[i]), "?") {
		q.Text = plain(l.lines[i])
	}
	return q, q.Text != ""
}
