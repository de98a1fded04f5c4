package handlers

import (
	"fmt"
	"slices"
	"strconv"
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

// toolsSkill holds the tool, GenUI and state-patch rules every phase prompt starts with.
const toolsSkill = "tools"

// buildPrompt is the Prompt of every handler: the shared tool rules, then either the phase's
// skills and stage texts or, past the turn limit, its nudge. Placeholders are filled here,
// where the allowed GenUI types, the missing fields and the limit are known, so every text
// the handler returns is ready to send.
func buildPrompt(h phaseHandler, s Skills, in PromptInput) (Pieces, error) {
	stage := in.Stage
	if stage == "" {
		stage = h.Stage(in.Artifacts)
	}
	if !slices.Contains(h.stages(), stage) {
		return Pieces{}, fmt.Errorf("%w: %s/%s", ErrUnknownStage, h.Phase(), stage)
	}
	p := Pieces{MaxOutputTokens: maxOutputTokens, ToolChoice: toolChoiceNone}
	names := []string{toolsSkill, skillName(h.Phase(), "skills"), skillName(h.Phase(), "stages", stage)}
	if nudging(in) {
		p.Nudge = true
		names = []string{toolsSkill, skillName(h.Phase(), "nudge")}
	} else if tools := h.tools(stage); len(tools) > 0 {
		p.AllowedTools = slices.Clone(tools)
		p.ToolChoice = toolChoiceAuto
	}
	vars := placeholders(h, in)
	for _, name := range names {
		text, err := s.Text(name, in.Locale)
		if err != nil {
			return Pieces{}, fmt.Errorf("handlers: %s prompt: %w", h.Phase(), err)
		}
		p.Texts = append(p.Texts, fill(text, vars))
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

// placeholders are the values the skill texts may use, as {{name}}.
func placeholders(h phaseHandler, in PromptInput) map[string]string {
	missing := h.PostProcess(PostInput{Artifacts: in.Artifacts}).MissingFields
	return map[string]string{
		"allowed_genui":  codeList(h.AllowedGenUI()),
		"missing_fields": codeList(missing),
		"turn_limit":     strconv.Itoa(in.TurnLimit),
	}
}

// codeList renders names as Markdown code, comma-separated; an empty list is a dash, which
// reads the same in every locale.
func codeList(names []string) string {
	if len(names) == 0 {
		return "—"
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	return strings.Join(quoted, ", ")
}

// fill replaces each {{name}} of vars in text. Unknown placeholders stay as they are, so an
// admin's stored prompt with a typo still reaches the model instead of failing the turn.
func fill(text string, vars map[string]string) string {
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}
