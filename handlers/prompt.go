package handlers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/phaseflow/phaseflow/phases"
)

// maxOutputTokens caps every phase reply: enough for thinking, a final answer with a table
// and the two AGENT blocks, small enough that a runaway reply ends quickly.
const maxOutputTokens = 2000

// Tool choices sent upstream: the model may call a tool, or must not.
const (
	toolChoiceAuto = "auto"
	toolChoiceNone = "none"
)

// buildPrompt is the Prompt of every handler: the phase's skills and stage texts or, past
// the turn limit, its nudge. The texts keep their {{placeholders}}: the prompt builder fills
// them for every text it sends (these, the contract and the tool rules, which it adds
// itself), so there is one place that knows how a value is written.
func buildPrompt(h phaseHandler, s Skills, in PromptInput) (Pieces, error) {
	stage := in.Stage
	if stage == "" {
		stage = h.Stage(in.Artifacts)
	}
	if !slices.Contains(h.stages(), stage) {
		return Pieces{}, fmt.Errorf("%w: %s/%s", ErrUnknownStage, h.Phase(), stage)
	}
	p := Pieces{MaxOutputTokens: maxOutputTokens, ToolChoice: toolChoiceNone}
	names := []string{skillName(h.Phase(), "skills"), skillName(h.Phase(), "stages", stage)}
	if nudging(in) {
		p.Nudge = true
		names = []string{skillName(h.Phase(), "nudge")}
	} else if tools := h.tools(stage); len(tools) > 0 {
		p.AllowedTools = slices.Clone(tools)
		p.ToolChoice = toolChoiceAuto
	}
	for _, name := range names {
		text, err := s.Text(name, in.Locale)
		if err != nil {
			return Pieces{}, fmt.Errorf("handlers: %s prompt: %w", h.Phase(), err)
		}
		p.Texts = append(p.Texts, text)
	}
	return p, nil
}

// nudging reports whether the stop criteria apply: the phase has a limit and this turn is
// past it.
func nudging(in PromptInput) bool {
	return in.TurnLimit > 0 && in.TurnCount > in.TurnLimit
}

// skillName joins a skill path: "strategy" + "stages" + "draft" → "strategy/stages/draft".
func skillName(p phases.Phase, parts ...string) string {
	return string(p) + "/" + strings.Join(parts, "/")
}
