// Package carryover is step 5 of a turn (docs/turn.md): the short memory a session
// carries from one phase into the next. [Build] makes the block when the phase moves (the
// old phase's artifacts that matter and the last exchanges, trimmed, in the session's
// locale); it is stored in the session metadata, and [Take] puts it before the user's text
// on the new phase's first turn and marks it used, so it is sent exactly once.
package carryover

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/store"
)

// Move is a phase move a block is built for.
type Move struct {
	From, To string
	// Reason says why, in the session's locale: the text of the skill the phase handler
	// named (see [Reason]), or the user's own words on the manual route.
	Reason string
}

// Reason renders the skill called name in locale as a move's reason for the model: its
// {{placeholders}} are filled from the old phase's block (a blocked deployment names its
// blocker_code), and it is trimmed to fit inside the carryover's sentence.
func Reason(skills handlers.Skills, locale, name string, old map[string]any) (string, error) {
	text, err := skills.Text(name, locale)
	if err != nil {
		return "", fmt.Errorf("carryover: reason: %w", err)
	}
	values := map[string]string{}
	for k, v := range old {
		if s, ok := v.(string); ok {
			values[k] = s
		}
	}
	return strings.TrimSpace(fill(text, values)), nil
}

// Build renders the carryover skill for m: the old phase's block and the last exchanges,
// each labelled by the skills carryover/user and carryover/assistant, all in locale.
func Build(skills handlers.Skills, locale string, m Move, old map[string]any, exchanges []store.Message, at time.Time) (*Block, error) {
	texts := map[string]string{}
	for _, name := range []string{"carryover", "carryover/user", "carryover/assistant"} {
		t, err := skills.Text(name, locale)
		if err != nil {
			return nil, fmt.Errorf("carryover: %w", err)
		}
		texts[name] = strings.TrimRight(t, "\n")
	}
	labels := Labels{User: texts["carryover/user"], Assistant: texts["carryover/assistant"]}
	b := &Block{From: m.From, To: m.To, Reason: m.Reason, Exchanges: Exchanges(exchanges, labels, 4, 300), CreatedAt: at}
	return b, b.render(texts["carryover"], old)
}

// Rebuild renders a waiting block again over the old phase's new block (the confirm route
// changed it after the move), keeping its reason and exchanges. A block stored before
// those were kept is left as it is.
func Rebuild(skills handlers.Skills, locale string, b *Block, old map[string]any) error {
	if b.Reason == "" && b.Exchanges == "" {
		return nil
	}
	tmpl, err := skills.Text("carryover", locale)
	if err != nil {
		return fmt.Errorf("carryover: %w", err)
	}
	return b.render(strings.TrimRight(tmpl, "\n"), old)
}

// render fills the carryover template for b with the old phase's block.
func (b *Block) render(tmpl string, old map[string]any) error {
	arts, err := json.Marshal(old)
	if err != nil {
		return fmt.Errorf("carryover: encode artifacts: %w", err)
	}
	b.Text = fill(tmpl, map[string]string{
		"from": b.From, "to": b.To, "reason": b.Reason, "artifacts": string(arts), "exchanges": b.Exchanges,
	}) + "\n"
	return nil
}

// Labels are the templates of one exchange line per role, each with a {{text}}
// placeholder ("User: {{text}}").
type Labels struct{ User, Assistant string }

// fill replaces {{name}} placeholders with their values.
func fill(text string, values map[string]string) string {
	for k, v := range values {
		text = strings.ReplaceAll(text, "{{"+k+"}}", v)
	}
	return text
}

// Block is one phase's carryover for the next. Reason and Exchanges are what Text was
// rendered from besides the old block, kept so [Rebuild] can render it again.
type Block struct {
	From      string    `json:"from"`
	To        string    `json:"to"`
	Text      string    `json:"text"`
	Used      bool      `json:"used"`
	CreatedAt time.Time `json:"created_at"`
	Reason    string    `json:"reason,omitempty"`
	Exchanges string    `json:"exchanges,omitempty"`
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

// Exchanges renders the last n messages as one line each, by the label of its role, each
// cut to max code points, for the carryover block. A reply is reduced to its final answer:
// the reasoning of the old phase is not worth the new phase's tokens.
func Exchanges(msgs []Message, labels Labels, n, max int) string {
	if len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	lines := make([]string, 0, len(msgs))
	for _, m := range msgs {
		text, label := m.Content, labels.User
		if m.Role == store.RoleAssistant {
			text, label = finalOf(text), labels.Assistant
		}
		lines = append(lines, fill(label, map[string]string{"text": cut(strings.Join(strings.Fields(text), " "), max)}))
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
