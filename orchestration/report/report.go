// Package report tells operators about each finished turn: one INFO line (or WARN for a
// failure) with what they look for first, and the turn's metrics (outcome, tokens, MCP
// tool calls, correction retries, upstream errors, phase moves). Labels that could come
// from outside (a tool name a provider invents, a server label) are mapped onto closed sets
// here, so no input can grow a metric's series.
package report

import (
	"log/slog"
	"slices"
	"time"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// Metrics receives what operators alert on about turns (package metrics implements it).
type Metrics interface {
	TurnStarted()
	TurnRestarted()
	FirstDelta(d time.Duration)
	TurnEnded(outcome, code string, d time.Duration)
	UpstreamError(code string, endpointID int)
	Tokens(provider, model string, endpointID, input, output int)
	ToolCall(server, tool, status string, d time.Duration)
	CorrectionRetry(reason string)
	PhaseMoved(from, to string)
}

// Discard is the Metrics of an orchestrator built without one: it reports nothing.
func Discard() Metrics { return discard{} }

type discard struct{}

func (discard) TurnStarted()                                   {}
func (discard) TurnRestarted()                                 {}
func (discard) FirstDelta(time.Duration)                       {}
func (discard) TurnEnded(string, string, time.Duration)        {}
func (discard) UpstreamError(string, int)                      {}
func (discard) Tokens(string, string, int, int, int)           {}
func (discard) ToolCall(string, string, string, time.Duration) {}
func (discard) CorrectionRetry(string)                         {}
func (discard) PhaseMoved(string, string)                      {}

// other is the label of a tool or server outside the known sets.
const other = "other"

// Turn is a finished turn as the report reads it.
type Turn struct {
	MessageID, SessionID, RequestID string
	Route                           events.Route
	Outcome                         *stream.Outcome // never nil
	Status, Code                    string          // the message's final status; the error code, "" when completed
	Err                             error           // why it failed, for the log
	FirstDelta, Duration            time.Duration
	Move                            *events.PhaseChange // nil when the phase did not move
	// UpstreamFailure says the code is an upstream's failure (counted per endpoint).
	UpstreamFailure bool
}

// Reporter reports finished turns to a logger and metrics.
type Reporter struct {
	logger  *slog.Logger
	metrics Metrics
	servers []string // the configured MCP server labels
}

// New returns a reporter; servers are the configured MCP servers' labels.
func New(logger *slog.Logger, m Metrics, servers []string) *Reporter {
	return &Reporter{logger: logger, metrics: m, servers: servers}
}

// Ended reports a finished turn: its metrics and its one log line.
func (r *Reporter) Ended(t Turn) {
	model := ""
	if t.Route.ResolvedModel != nil {
		model = *t.Route.ResolvedModel
	}
	in, out := 0, 0
	if u := t.Outcome.Result.Usage; u != nil {
		in, out = u.InputTokens, u.OutputTokens
		r.metrics.Tokens(t.Route.Provider, model, t.Route.EndpointID, in, out)
	}
	for _, c := range t.Outcome.Calls {
		r.metrics.ToolCall(r.server(c.ServerLabel), tool(c.Name), string(c.Status), time.Duration(c.DurationMS)*time.Millisecond)
	}
	for i := 0; i < t.Outcome.Attempts-1 && i < len(t.Outcome.Refused); i++ {
		r.metrics.CorrectionRetry(reason(t.Outcome.Refused[i]))
	}
	if t.UpstreamFailure {
		r.metrics.UpstreamError(t.Code, t.Route.EndpointID)
	}
	if t.Move != nil {
		r.metrics.PhaseMoved(t.Move.From, t.Move.To)
	}
	attrs := []any{"message_id", t.MessageID, "session_id", t.SessionID, "request_id", t.RequestID,
		"provider", t.Route.Provider, "model", model, "endpoint", t.Route.EndpointID,
		"input_tokens", in, "output_tokens", out, "first_delta", t.FirstDelta.String(), "duration", t.Duration.String(),
		"attempts", t.Outcome.Attempts, "outcome", t.Status, "code", t.Code}
	if t.Move != nil {
		attrs = append(attrs, "phase_from", t.Move.From, "phase_to", t.Move.To)
	}
	if t.Code == "" {
		r.logger.Info("turn finished", attrs...)
		return
	}
	r.logger.Warn("turn failed", append(attrs, "err", t.Err)...)
}

// server is label when it is a configured MCP server's, else "other".
func (r *Reporter) server(label string) string {
	if slices.Contains(r.servers, label) {
		return label
	}
	return other
}

// tool is name when the phases know it, else "other".
func tool(name string) string {
	if handlers.KnownTool(name) {
		return name
	}
	return other
}

// reason is a refused attempt's first problem's code (validation codes and
// reply_language: a closed set).
func reason(issues []thinkingml.Issue) string {
	if len(issues) == 0 {
		return other
	}
	return string(issues[0].Code)
}
