package prompt

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// Input is everything one prompt is built from.
type Input struct {
	Session   *store.Session
	History   []store.Message // earlier completed messages, oldest first
	UserText  string
	Carryover string // the phase's carryover block, put before the user's text once
	// Correction lists why the previous attempt was refused; when set, the correction note
	// is added to the instructions.
	Correction []string

	Stage      string            // the phase's current stage
	Artifacts  map[string]any    // the current phase's artifacts, shown in the state block
	PhaseTexts []string          // the phase handler's prompt pieces, in order
	Values     map[string]string // placeholder values: allowed_genui, missing_fields, turn_limit

	Tools           []json.RawMessage // MCP tool definitions, already merged
	ToolChoice      string
	MaxOutputTokens int
	// PreviousResponseID chains the request to the previous response: the history is then
	// not resent (only upstreams that store responses support it).
	PreviousResponseID string
}

// say renders the skill tool_errors/<key> in locale for the upstream client (its
// [upstream.Request.Say]): the texts a client writes to the model itself, such as a failed
// tool call's result on the chat wire. It reads the skill only when called.
func say(skills handlers.Skills, locale string) func(key string, values map[string]string) (string, bool) {
	return func(key string, values map[string]string) (string, bool) {
		text, err := skills.Text("tool_errors/"+key, locale)
		if err != nil {
			return "", false
		}
		return strings.TrimSpace(Fill(text, values)), true
	}
}

// Builder builds upstream requests.
type Builder struct {
	model     string
	maxOutput int
}

// New returns a builder for model; maxOutput caps replies when the phase sets no cap (0: none).
func New(model string, maxOutput int) *Builder {
	return &Builder{model: model, maxOutput: maxOutput}
}

// Build returns the upstream request for one attempt of a turn, reading texts from skills.
func (b *Builder) Build(skills handlers.Skills, in Input) (upstream.Request, error) {
	instructions, err := b.instructions(skills, in)
	if err != nil {
		return upstream.Request{}, err
	}
	req := upstream.Request{
		Model: b.model, Instructions: instructions, Input: conversation(in),
		Tools: in.Tools, MaxOutputTokens: b.maxOutput, PreviousResponseID: in.PreviousResponseID,
		Say: say(skills, in.Session.Locale), Owner: in.Session.UserID,
	}
	if len(in.Tools) > 0 && in.ToolChoice != "" {
		req.ToolChoice = in.ToolChoice
	}
	if in.MaxOutputTokens > 0 {
		req.MaxOutputTokens = in.MaxOutputTokens
	}
	return req, nil
}

// instructions joins, in order: the output contract, the tool rules, the phase's pieces,
// the session state block and, on a retry, the correction note.
func (b *Builder) instructions(skills handlers.Skills, in Input) (string, error) {
	locale := in.Session.Locale
	var parts []string
	for _, name := range []string{"contract", "tools"} {
		text, err := skills.Text(name, locale)
		if err != nil {
			return "", fmt.Errorf("prompt: %w", err)
		}
		parts = append(parts, text)
	}
	parts = append(parts, in.PhaseTexts...)
	state, err := b.state(skills, in)
	if err != nil {
		return "", err
	}
	parts = append(parts, state)
	if len(in.Correction) > 0 {
		note, err := skills.Text("correction", locale)
		if err != nil {
			return "", fmt.Errorf("prompt: %w", err)
		}
		parts = append(parts, strings.ReplaceAll(note, "{{reasons}}", "- "+strings.Join(in.Correction, "\n- ")))
	}
	return Fill(strings.Join(parts, "\n\n"), in.Values), nil
}

// state renders the [SESSION STATE] block: phase, stage, locale and the phase's artifacts
// on one line, so the model (and the scripted upstream) know where the conversation is.
func (b *Builder) state(skills handlers.Skills, in Input) (string, error) {
	text, err := skills.Text("state", in.Session.Locale)
	if err != nil {
		return "", fmt.Errorf("prompt: %w", err)
	}
	artifacts, err := json.Marshal(in.Artifacts)
	if err != nil {
		return "", fmt.Errorf("prompt: encode artifacts: %w", err)
	}
	return Fill(text, map[string]string{
		"phase": in.Session.Phase, "stage": in.Stage, "locale": in.Session.Locale, "artifacts": string(artifacts),
	}), nil
}

// Fill replaces {{name}} placeholders with their values; unknown ones stay as they are. It
// reads text once, left to right, and does not read the values it puts in: a value that
// holds a placeholder (an artifact the user wrote, say) keeps it as written. One
// strings.ReplaceAll per value copied the whole text for each (the instructions are
// kilobytes), and a value holding another's placeholder was filled or not depending on
// the map's order.
func Fill(text string, values map[string]string) string {
	var b strings.Builder
	done := 0 // text[:done] is in b
	for at := 0; ; {
		i := strings.Index(text[at:], "{{")
		if i < 0 {
			break
		}
		open := at + i
		j := strings.Index(text[open+2:], "}}")
		if j < 0 {
			break
		}
		v, ok := values[text[open+2:open+2+j]]
		if !ok {
			at = open + 1 // "{{{x}}" holds "{{x}}" one byte on
			continue
		}
		if b.Cap() == 0 {
			b.Grow(len(text) + len(v))
		}
		b.WriteString(text[done:open])
		b.WriteString(v)
		done = open + 2 + j + 2
		at = done
	}
	if done == 0 {
		return text
	}
	b.WriteString(text[done:])
	return b.String()
}

// conversation resends the recent history in full unless the request is chained with
// previous_response_id, which most Responses servers besides OpenAI ignore or reject
// (docs/upstreams.md).
func conversation(in Input) []upstream.InputItem {
	var items []upstream.InputItem
	if in.PreviousResponseID == "" {
		for _, m := range in.History {
			if m.Content == "" || (m.Role != store.RoleUser && m.Role != store.RoleAssistant) {
				continue
			}
			items = append(items, upstream.InputItem{Role: m.Role, Content: m.Content})
		}
	}
	text := in.UserText
	if in.Carryover != "" {
		text = in.Carryover + "\n\n" + text
	}
	return append(items, upstream.InputItem{Role: store.RoleUser, Content: text})
}
