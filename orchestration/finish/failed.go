package finish

import (
	"encoding/json"
	"errors"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/lease"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/store"
)

// Causes a turn ends with, besides the upstream's and the lease's; the orchestrator stops
// turns with them.
var (
	// ErrInterrupted ends a turn stopped by server shutdown.
	ErrInterrupted = errors.New("interrupted: the server stopped before the reply was finished")
	// ErrTurnTimeout ends a turn cut by the hard turn limit.
	ErrTurnTimeout = errors.New("the turn took longer than its time limit")
)

// Failure is how a turn failed: its plan (nil when it failed before one), what its attempts
// did, the error it ended on and the cause its context was cancelled with (nil when it was
// not), and where its fallback reply comes from without a plan (the plan's texts
// otherwise).
type Failure struct {
	Plan    *prompt.Plan
	Outcome stream.Outcome
	Err     error
	Cause   error
	Texts   handlers.Skills
	Locale  string
}

// Failed is the tail of a turn that ends with an error event: the message keeps the partial
// text (and its MCP calls: tools that ran are recorded whatever the outcome), and a stream
// broken after partial text also gets the fallback reply in the session's locale.
func Failed(t Turn, f Failure) Tail {
	code, status, text := Classify(f.Cause, f.Err)
	res := f.Outcome.Result
	msg := result(t, status, res.Text)
	calls := postprocess.ToolCalls(f.Outcome.Calls)
	msg.Records = records(calls)
	meta := events.FailureMetadata{Attempts: f.Outcome.Attempts, RefusedAttempts: events.RefusedAttempts(f.Outcome.Refused)}
	texts := f.Texts
	if f.Plan != nil {
		meta.Phase, meta.RuntimePolicy, texts = string(f.Plan.Phase), &f.Plan.Policy, f.Plan.Skills
	}
	var refused *stream.RefusedError
	if errors.As(f.Err, &refused) {
		meta.Problems = problemTexts(refused.Refused)
	}
	if brokenOff(code, res.Text) {
		meta.FallbackReply = fallback(texts, f.Locale)
	}
	text = localized(texts, f.Locale, code, text)
	if words := failure.Refusal(f.Err); words != "" {
		text += " " + words // the model's own words, written for the user
	}
	route := finalRoute(t.Route, res)
	data := &events.ErrorData{Code: code, Message: text, Error: text, Provider: route.Provider, ResolvedModel: route.ResolvedModel,
		EndpointID: route.EndpointID, ToolCalls: calls, Fallback: meta.FallbackReply}
	setError(msg, code, text)
	setJSON(&msg.ToolCalls, calls)
	setJSON(&msg.Metadata, meta)
	return Tail{Name: events.Error, Data: data, Message: msg, Code: code}
}

// Orphan is the tail of a generation this replica took over from a replica that is gone:
// an error event of code interrupted after the events the message already has, its partial
// text (what clients assembled from the committed deltas) kept, and the fallback reply
// beside it when there is partial text. why is the client's text in the session's locale
// ("" for the English one).
func Orphan(m *store.Message, text, fallbackReply, why string, route events.Route) Tail {
	msg := *m
	if why == "" {
		why = ErrInterrupted.Error()
	}
	msg.Status, msg.Content = store.StatusInterrupted, text
	setError(&msg, failure.Interrupted, why)
	data := &events.ErrorData{
		Base: events.Base{MessageID: m.ID, RequestID: m.RequestID}, Code: failure.Interrupted,
		Message: why, Error: why, Provider: route.Provider, ResolvedModel: route.ResolvedModel, EndpointID: route.EndpointID,
	}
	if text != "" {
		data.Fallback = fallbackReply
		setJSON(&msg.Metadata, events.FailureMetadata{FallbackReply: fallbackReply})
	}
	return Tail{Name: events.Error, Data: data, Message: &msg, Code: failure.Interrupted}
}

// setError sets a failed message's error column.
func setError(m *store.Message, code, text string) {
	setJSON(&m.Error, map[string]string{"code": code, "message": text})
}

// setJSON encodes v, a value of plain fields this package built (strings, numbers, the
// events' records), into a JSON column. Such a value cannot fail to encode; were it ever
// to, the column says so rather than going missing.
func setJSON(dst *store.JSON, v any) {
	b, err := jsonOrNull(v)
	if err != nil {
		b = store.JSON(`{"encoding_error":` + quote(err.Error()) + `}`)
	}
	*dst = b
}

// quote is s as a JSON string.
func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil { // a Go string always encodes (invalid UTF-8 is replaced); never so
		return `"the error could not be encoded"`
	}
	return string(b)
}

// brokenOff reports a stream that broke after partial text: a failure other than the
// user's cancel or a refused reply, with text already out. Its client gets a fallback.
func brokenOff(code, partial string) bool {
	return partial != "" && code != failure.Cancelled && code != failure.ReplyInvalid
}

// fallback is the reply that stands in for one cut off (skills fallback/interrupted), in
// the session's locale; "" when it cannot be read (the turn still ends).
func fallback(texts handlers.Skills, locale string) string {
	if texts == nil {
		return ""
	}
	text, err := postprocess.InterruptedFallback(texts, locale)
	if err != nil {
		return ""
	}
	return text
}

// localized is the client's text for code in the session's locale (skills errors/<code>),
// or text, the English one Classify gave, when the texts cannot be read: the turn ends
// either way, and every code has a text in every locale (the skills tests hold them).
func localized(texts handlers.Skills, locale, code, text string) string {
	if texts == nil {
		return text
	}
	if said, err := postprocess.ErrorMessage(texts, locale, code); err == nil {
		return said
	}
	return text
}

// Classify maps a turn's error (and the cause its context ended with) to the client error
// code, the message status and the text clients see: internal errors are not spelled out
// to them, nor a provider's own words.
func Classify(cause, err error) (code, status, text string) {
	var refused *stream.RefusedError
	switch {
	case errors.Is(err, lease.ErrCancelled) || errors.Is(cause, lease.ErrCancelled):
		return failure.Cancelled, store.StatusCancelled, lease.ErrCancelled.Error()
	case errors.Is(cause, lease.ErrOutage):
		return failure.Interrupted, store.StatusInterrupted, lease.ErrOutage.Error()
	case errors.Is(err, ErrInterrupted) || errors.Is(cause, ErrInterrupted):
		return failure.Interrupted, store.StatusInterrupted, ErrInterrupted.Error()
	case errors.Is(err, ErrTurnTimeout), errors.Is(cause, ErrTurnTimeout):
		return failure.UpstreamTimeout, store.StatusFailed, ErrTurnTimeout.Error()
	case errors.As(err, &refused):
		return failure.ReplyInvalid, store.StatusFailed, refused.Error()
	}
	if code, text, ok := stream.Failure(err); ok {
		return code, store.StatusFailed, text
	}
	return failure.InternalError, store.StatusFailed, "internal error"
}

// problemTexts lists each refused attempt's problems, in order.
func problemTexts(refused [][]thinkingml.Issue) []string {
	var out []string
	for _, issues := range refused {
		for _, is := range issues {
			out = append(out, string(is.Code)+": "+is.Message)
		}
	}
	return out
}
