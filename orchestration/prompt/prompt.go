// Package prompt is step 2 of a turn: it turns the session, its recent history and the
// user's text into the upstream request. Every text the model sees comes from the skills
// library in the session's locale; this package only decides what goes where.
package prompt

import (
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/orchestration/upstream"
	"github.com/phaseflow/phaseflow/store"
)

// Skills is where the builder reads the texts the model sees.
type Skills interface {
	Text(name, locale string) (string, error)
}

// Input is everything one prompt is built from.
type Input struct {
	Session   *store.Session
	History   []store.Message // earlier completed messages, oldest first
	UserText  string
	Carryover string // the phase's carryover block, put before the user's text once
	// Correction lists why the previous attempt was refused; when set, the correction note
	// is added to the instructions.
	Correction []string
}

// Builder builds upstream requests.
type Builder struct {
	skills    Skills
	model     string
	maxOutput int
}

// New returns a builder that asks model for at most maxOutput tokens (0: no limit).
func New(skills Skills, model string, maxOutput int) *Builder {
	return &Builder{skills: skills, model: model, maxOutput: maxOutput}
}

// Build returns the upstream request for one attempt of a turn.
func (b *Builder) Build(in Input) (upstream.Request, error) {
	locale := in.Session.Locale
	instructions, err := b.skills.Text("contract", locale)
	if err != nil {
		return upstream.Request{}, fmt.Errorf("prompt: %w", err)
	}
	if len(in.Correction) > 0 {
		note, err := b.skills.Text("correction", locale)
		if err != nil {
			return upstream.Request{}, fmt.Errorf("prompt: %w", err)
		}
		instructions += "\n\n" + strings.ReplaceAll(note, "{{reasons}}", "- "+strings.Join(in.Correction, "\n- "))
	}
	return upstream.Request{
		Model:           b.model,
		Instructions:    instructions,
		Input:           conversation(in),
		MaxOutputTokens: b.maxOutput,
	}, nil
}

// conversation resends the recent history in full rather than chaining with
// previous_response_id, which most Responses servers besides OpenAI ignore or reject
// (upstream-wire.md §7).
func conversation(in Input) []upstream.InputItem {
	items := make([]upstream.InputItem, 0, len(in.History)+1)
	for _, m := range in.History {
		if m.Content == "" || (m.Role != "user" && m.Role != "assistant") {
			continue
		}
		items = append(items, upstream.InputItem{Role: m.Role, Content: m.Content})
	}
	text := in.UserText
	if in.Carryover != "" {
		text = in.Carryover + "\n\n" + text
	}
	return append(items, upstream.InputItem{Role: "user", Content: text})
}
