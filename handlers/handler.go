// Package handlers holds one handler per phase (strategy, stress_test, deployment): the
// phase's initial artifacts, how its stage follows from them, which prompt pieces the model
// gets, which GenUI types it may send, and how a finished turn is judged (completed, next
// phase, missing fields). The orchestrator asks the handler of the session's phase at each
// step and never hard-codes a phase itself.
package handlers

import "github.com/phaseflow/phaseflow/phases"

// Skills is where handlers read their prompt texts (package skills).
type Skills interface {
	Text(name, locale string) (string, error)
}

// Artifacts is one phase's artifact block: field name → value (JSON types).
type Artifacts = map[string]any

// PromptInput is what a handler needs to choose its prompt pieces.
type PromptInput struct {
	Locale    string
	Stage     string
	Artifacts Artifacts
	TurnCount int // turns in this phase, this one included
	TurnLimit int // stop criteria: past it the nudge replaces the normal pieces
}

// Pieces is a handler's contribution to one prompt.
type Pieces struct {
	// Texts are added to the instructions after the output contract, in order.
	Texts []string
	// AllowedTools names the MCP tools the model may call in this phase and stage.
	AllowedTools []string
	// ToolChoice is "auto", "none" or "required".
	ToolChoice string
	// MaxOutputTokens caps the reply (0: no cap).
	MaxOutputTokens int
	// Nudge is true when the turn limit was passed and the nudge replaced the pieces.
	Nudge bool
}

// ToolResult is one MCP call of the turn, as a handler judges it.
type ToolResult struct {
	Name   string
	Status string // success or failure
	Output string
}

// PostInput is what a handler judges a finished turn by.
type PostInput struct {
	Artifacts Artifacts // the phase's artifacts after this turn's accepted patch
	ToolCalls []ToolResult
}

// Report is a handler's verdict on a turn.
type Report struct {
	Completed     bool
	NextPhase     phases.Phase // set when Completed
	MissingFields []string     // what the phase still needs, for the client and for choice_prompt
	Reason        string       // why it completed (or what is missing), for the transition row
	Evidence      map[string]any
}

// Handler is one phase's logic.
type Handler interface {
	Phase() phases.Phase
	// InitialArtifacts is the block a session starts the phase with (fills gaps too).
	InitialArtifacts() Artifacts
	// Stage picks the phase's current stage from its artifacts.
	Stage(a Artifacts) string
	// Prompt returns the phase's prompt pieces, in the locale, for the stage.
	Prompt(s Skills, in PromptInput) (Pieces, error)
	// AllowedGenUI lists the GenUI types the front end accepts in this phase.
	AllowedGenUI() []string
	// PostProcess judges the turn.
	PostProcess(in PostInput) Report
}
