package terminal

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// State is what the rules read on a screen.
type State int

// The states the rules read. The rules never read idle: a screen with neither work nor a
// question they can read whole may still hold a question in prose, which the model reads.
const (
	Unknown State = iota
	Busy
	Asking
)

// Reading is what the rules read on a prepared snapshot without a model.
type Reading struct {
	State State
	// Line is the line that shows the agent at work (Busy).
	Line string
	// Question is the question read (Asking).
	Question Question
	// Agent is the agent the screen shows, "" when it does not say.
	Agent Agent
}

// Read reads s by the rules, looking only at the live region and the composer's footer
// (see layout): a question there that reads with certainty wins over an interrupt hint
// left on screen; a question the rules see but cannot read whole leaves the screen to the
// model; else work shown there is Busy. Its cost is linear in the snapshot's size.
func Read(s Snapshot) Reading {
	l := newLayout(s.Lines)
	r := Reading{Agent: detectAgent(s.Lines)}
	q, ok, seen := l.question()
	switch {
	case ok:
		r.State, r.Question = Asking, q
	case seen:
	default:
		if busy, line := l.busy(); busy {
			r.State, r.Line = Busy, line
		}
	}
	return r
}

// Hints are the texts that end a question's message and name its subject, in the
// reader's language (docs/json-skills.md's "回复字母/数字选择", "回复 y/n", "回复内容").
type Hints struct {
	Choice, Confirmation, Open string
}

// messageLimit is the longest message the terminal_state skill may answer.
const messageLimit = 500

// Message formats the question as docs/json-skills.md asks: the question, what waits for approval,
// the options one a line, and what to reply; at most messageLimit characters.
func (q Question) Message(h Hints) string {
	var b strings.Builder
	b.WriteString(cut(q.Text, 200))
	if q.Subject != "" {
		b.WriteString("\n" + cut(q.Subject, 160))
	}
	if q.Kind == KindChoice {
		for i, o := range q.Options {
			fmt.Fprintf(&b, "\n%d. %s", i+1, cut(o.Label, 80))
		}
	}
	hint := map[Kind]string{KindChoice: h.Choice, KindConfirmation: h.Confirmation, KindOpen: h.Open}[q.Kind]
	return cut(b.String(), messageLimit-len([]rune(hint))-2) + "\n\n" + hint
}

// cut shortens s to n characters, ending with "…" when cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Fingerprint names the question in docs/json-skills.md's form (English keywords joined by hyphens):
// the question's words, then the subject's and a hash of the whole subject, so approvals of
// two commands are two questions and the same question on screen again is the same one.
func (q Question) Fingerprint() string {
	fp := slug(q.Text, 8)
	if fp == "" {
		fp = "q-" + hash(q.Text)
	}
	if q.Subject != "" {
		if s := slug(q.Subject, 6); s != "" {
			fp += "-" + s
		}
		fp += "-" + hash(q.Subject)
	}
	if len(fp) > 200 {
		fp = strings.TrimRight(fp[:200], "-")
	}
	return fp
}

// slug is the first n words of s, lower-cased ASCII letters and digits, joined by hyphens.
func slug(s string, n int) string {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	return strings.Join(words[:min(n, len(words))], "-")
}

// hash is eight hex digits of s's FNV-1a hash.
func hash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s)) // a hash.Hash never fails to write
	return fmt.Sprintf("%08x", h.Sum32())
}
