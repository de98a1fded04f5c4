// Package carryover keeps the short memory a session carries from one phase into the next:
// a block built when the phase moves, stored in the session metadata, put before the user's
// text on the new phase's first turn and then marked used, so it is sent exactly once.
package carryover

import (
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// Block is one phase's carryover for the next.
type Block struct {
	From      string    `json:"from"`
	To        string    `json:"to"`
	Text      string    `json:"text"`
	Used      bool      `json:"used"`
	CreatedAt time.Time `json:"created_at"`
}

// Take returns the text to put before the user's message on this turn, if a block for phase
// is waiting, and marks it used. It returns "" when there is nothing to carry.
func Take(b *Block, phase string) string {
	if b == nil || b.Used || b.To != phase || b.Text == "" {
		return ""
	}
	b.Used = true
	return b.Text
}

// Exchanges renders the last n messages as "role: text" lines, each cut to max code points,
// for the carryover block. A reply is reduced to its final answer: the reasoning of the old
// phase is not worth the new phase's tokens.
func Exchanges(msgs []Message, n, max int) string {
	if len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	lines := make([]string, 0, len(msgs))
	for _, m := range msgs {
		text := m.Content
		if m.Role == "assistant" {
			text = finalOf(text)
		}
		lines = append(lines, m.Role+": "+cut(strings.Join(strings.Fields(text), " "), max))
	}
	return strings.Join(lines, "\n")
}

// Message is one exchange as the carryover needs it.
type Message = store.Message

func finalOf(reply string) string {
	if _, after, ok := strings.Cut(reply, "<final>"); ok {
		reply, _, _ = strings.Cut(after, "</final>")
	}
	if i := strings.Index(reply, "<!-- <serp_queries>"); i >= 0 {
		reply = reply[:i]
	}
	return reply
}

func cut(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max]) + "…"
}
