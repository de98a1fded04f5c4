package events

import (
	"encoding/json"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/store"
)

// Metadata is completed.metadata (docs/api.md): what the front end renders besides
// the text. It is also persisted with the message.
type Metadata struct {
	Phase       string             `json:"phase"`
	PhaseChange *PhaseChange       `json:"phase_change"`
	GenUI       []json.RawMessage  `json:"genui"`
	StatePatch  json.RawMessage    `json:"state_patch"`
	ToolCalls   []store.ToolCall   `json:"tool_calls"`
	Validation  *thinkingml.Result `json:"validation"`
	// ReplyLanguage is the kept reply's language verdict, passing or not (absent when
	// replies are not checked).
	ReplyLanguage *thinkingml.LanguageResult `json:"reply_language,omitempty"`
	Usage         *Usage                     `json:"usage"`
	MissingFields []string                   `json:"missing_fields"`
	Attempts      int                        `json:"attempts"`
	Stage         string                     `json:"stage,omitempty"`
	RejectedPatch *RejectedPatch             `json:"rejected_patch,omitempty"`
	DroppedGenUI  []string                   `json:"dropped_genui,omitempty"`
	// DeploymentSummary is the phase handler's summary (the deployment's state).
	DeploymentSummary map[string]any `json:"deployment_summary,omitempty"`
	Fallback          bool           `json:"fallback,omitempty"`
	// Problems lists why the kept reply would have been refused (the report policy).
	Problems []string `json:"problems,omitempty"`
	// RefusedAttempts lists the attempts the server refused and asked again for, each with
	// its problems (docs/phases.md: why the first reply was refused is kept).
	RefusedAttempts []RefusedAttempt `json:"refused_attempts,omitempty"`
	// SessionTitle is the session's new title when this turn gave it one (a session the
	// user did not title is named after the strategy, or its first message).
	SessionTitle string `json:"session_title,omitempty"`
	// RuntimePolicy is the policy the turn ran under.
	RuntimePolicy *RuntimePolicy `json:"runtime_policy,omitempty"`
	// StopCriteria are the phase's performance thresholds judged on its latest run
	// (absent when none are configured).
	StopCriteria *handlers.StopCriteria `json:"stop_criteria,omitempty"`
}

// RuntimePolicy is the runtime policy a turn ran under (docs/turn.md): the
// request's runtime_policy merged over the phase's defaults and the server's settings.
type RuntimePolicy struct {
	ReplyPolicy  string `json:"reply_policy"`
	SerpOptional bool   `json:"serp_optional"`
	// MaxOutputTokens is the reply's token cap (0: none), the smallest of the phase's or
	// the server's and the request's.
	MaxOutputTokens int      `json:"max_output_tokens"`
	ToolChoice      string   `json:"tool_choice,omitempty"`
	AllowedTools    []string `json:"allowed_tools,omitempty"`
	// Requested names the keys the request set.
	Requested []string `json:"requested,omitempty"`
}

// RefusedAttempt is one attempt whose reply was refused, with every problem found in it
// (validation errors by their stable codes, and reply_language).
type RefusedAttempt struct {
	Attempt  int                `json:"attempt"`
	Problems []thinkingml.Issue `json:"problems"`
}

// RefusedAttempts numbers the refused attempts of a turn, in order (the first is 1).
func RefusedAttempts(refused [][]thinkingml.Issue) []RefusedAttempt {
	var out []RefusedAttempt
	for i, issues := range refused {
		out = append(out, RefusedAttempt{Attempt: i + 1, Problems: issues})
	}
	return out
}

// FailureMetadata is the metadata stored with a message whose turn failed: what a
// completed turn reports in completed.metadata, as far as the turn got.
type FailureMetadata struct {
	Phase    string `json:"phase,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	// Problems lists every refused attempt's problems as "code: message" lines, in order
	// (RefusedAttempts has them by attempt, with their positions).
	Problems        []string         `json:"problems,omitempty"`
	RefusedAttempts []RefusedAttempt `json:"refused_attempts,omitempty"`
	// FallbackReply is the error event's fallback, kept apart from the partial text (the
	// message's content).
	FallbackReply string `json:"fallback_reply,omitempty"`
	// RuntimePolicy is the policy the turn ran under, once its plan was made.
	RuntimePolicy *RuntimePolicy `json:"runtime_policy,omitempty"`
}

// PhaseChange is completed.metadata.phase_change: the move the turn made.
type PhaseChange struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// RejectedPatch is a state patch that was not applied, with why.
type RejectedPatch struct {
	Patch   json.RawMessage `json:"patch"`
	Reasons []string        `json:"reasons"`
}

// Usage is the token accounting of a reply, as the provider billed it.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}
