package jsonskill

import "github.com/phaseflow/phaseflow/upstream"

// meta is how a run's answer was got, stored and returned as the run's meta.
type meta struct {
	// Attempts counts model calls: widening calls and the correction retry included.
	Attempts int `json:"attempts"`
	// DecidedBy is "model", or "rules" when the rules answered without a call.
	DecidedBy string `json:"decided_by"`
	// WindowLines lists the snapshot sizes sent, in lines (terminal_state).
	WindowLines []int `json:"window_lines,omitempty"`
	// ProviderDetected, OutputModeUsed, EndpointID and ResolvedModel say where the last
	// call went and in which output mode ("rules" when none was made).
	ProviderDetected string `json:"provider_detected"`
	OutputModeUsed   string `json:"output_mode_used"`
	EndpointID       int    `json:"endpoint_id"`
	ResolvedModel    string `json:"resolved_model"`
	// Repaired reports text around an answer's JSON object (prose, a code fence).
	Repaired bool `json:"repaired"`
	// Usage sums the calls' tokens.
	Usage usage `json:"usage"`
	// LatencyMS is the run's time, calls and rules together.
	LatencyMS int64 `json:"latency_ms"`
	// Refused lists why each refused answer was refused.
	Refused []string `json:"refused,omitempty"`
	// Refusal is the model's refusal of a run that failed model_refused, in its words.
	Refusal string `json:"refusal,omitempty"`
	// Partial is the text that came before the output limit cut a run's answer
	// (output_truncated).
	Partial string `json:"partial,omitempty"`
	// Screen is what the rules read on a terminal snapshot.
	Screen *screenMeta `json:"screen,omitempty"`

	// The reasoning-language fields of docs/json-skills.md, for skills with that rule.
	ReasoningLanguage          *string `json:"reasoning_language,omitempty"`
	ReasoningLanguageViolation *bool   `json:"reasoning_language_violation,omitempty"`
	ReasoningLanguageRetryUsed *bool   `json:"reasoning_language_retry_used,omitempty"`
}

// screenMeta is what the rules read on a terminal snapshot, beyond the answer: the agent
// the screen shows, and for a question they read, the rule, what waits for approval and the
// keys that choose each option on the agent's screen (in the order of the answer's options),
// for whoever types the answer back.
type screenMeta struct {
	Agent   string     `json:"agent,omitempty"`
	Rule    string     `json:"rule,omitempty"`
	Subject string     `json:"subject,omitempty"`
	Keys    [][]string `json:"keys,omitempty"`
}

// usage is a run's token count.
type usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// endpoint notes where a call went, from its events.
func (m *meta) endpoint(ev upstream.Event) {
	m.ProviderDetected, m.EndpointID, m.OutputModeUsed = ev.Provider, ev.EndpointID, ev.OutputMode
	if ev.Model != "" {
		m.ResolvedModel = ev.Model
	}
	if ev.Usage != nil {
		m.Usage.InputTokens += ev.Usage.InputTokens
		m.Usage.OutputTokens += ev.Usage.OutputTokens
	}
}

// language records a language verdict: the latest is the run's, and a non_zh one is a
// violation for good.
func (m *meta) language(lang string) {
	m.ReasoningLanguage = &lang
	violated := lang != langZH || (m.ReasoningLanguageViolation != nil && *m.ReasoningLanguageViolation)
	m.ReasoningLanguageViolation = &violated
	if m.ReasoningLanguageRetryUsed == nil {
		used := false
		m.ReasoningLanguageRetryUsed = &used
	}
}

// languageRetry records that the correction retry was made for the reasoning's language.
func (m *meta) languageRetry() {
	used := true
	m.ReasoningLanguageRetryUsed = &used
}
