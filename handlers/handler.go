// Package handlers holds one handler per phase (strategy, stress_test, deployment): the
// phase's initial artifacts, how its stage follows from them, which prompt pieces the model
// gets, which GenUI types it may send, how a finished turn is judged (completed, next
// phase, missing fields, what it records), which fields survive when the phase is entered
// again, and the strategy confirm route's rule. Every phase-specific rule lives here; the
// orchestrator asks the handler of the session's phase at each step and never names a
// phase itself.
package handlers

import (
	"encoding/json"

	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

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

// PostInput is what a handler judges a finished turn by.
type PostInput struct {
	Artifacts Artifacts // the phase's artifacts after this turn's accepted patch
	ToolCalls []store.ToolCall
	// Patch is the accepted patch the model sent (nil for none): a field it sets is the
	// model's, and tool results fill only the fields it left out.
	Patch map[string]any
}

// StrategyRecord is a strategy a turn drafted or validated, for the strategies table. ID
// is never empty (a fresh one for a new draft).
type StrategyRecord struct {
	ID             string
	Name           string
	Spec           any // the draft's spec object, nil when the turn only changed a status
	Status         string
	BacktestStatus string
}

// Report is a handler's verdict on a turn.
type Report struct {
	Completed     bool
	NextPhase     phases.Phase // set when Completed
	MissingFields []string     // what the phase still needs, for the client
	// Ask is what of MissingFields the server's choice_prompt asks the user for: what a
	// user can settle, by a decision or by asking for the work. A field that only time
	// settles (the final state of a running deployment) is not asked: there is nothing to
	// answer.
	Ask    []string
	Reason string // why it completed (or what is missing), for the transition row
	// ReasonSkill names the skill that says why the phase moves, in the session's locale,
	// for the model (the carryover block); its {{placeholders}} are the old block's
	// fields. Set when Completed.
	ReasonSkill string
	Evidence    map[string]any
	// Checks are the phase's stop criteria judged on the block (nil when none are set): a
	// missed one is also in MissingFields.
	Checks []Check
	// Artifacts is the phase's block after the handler's own additions (a recorded
	// strategy's id); nil means unchanged.
	Artifacts Artifacts
	// Strategy is the strategy to record when the reply is accepted, nil for none.
	Strategy *StrategyRecord
	// Summary is what the phase reports to the client besides the text (the deployment's
	// state), nil for none.
	Summary map[string]any
	// GenUI are the cards the phase builds from this turn's tool results and block (a
	// stress report, a deployment summary, the card of a new draft), added when the model
	// sent none of their type.
	GenUI []json.RawMessage
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
	// Enter returns the phase's block when the session moves (back) into it, from the
	// block it had: initial values, keeping what must survive (ids found so far).
	Enter(previous Artifacts) Artifacts
	// MissingQuestion says, in the locale, what the phase still needs (missing, the
	// fields its verdict reported), for the choice_prompt card the server adds when the
	// model asked nothing: a fallback so a turn never leaves them silent.
	MissingQuestion(s Skills, locale string, missing []string) (Missing, error)
}
