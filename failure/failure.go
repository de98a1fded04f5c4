// Package failure is the one vocabulary of how work ends without its answer, for chat turns,
// JSON skill runs and jobs alike: the error codes clients match on, and the one mapping from
// a model call's failure to a code and the message a client is told.
//
// A provider's own text never reaches a client (it can name the provider's internals, quote
// the request or echo a key prefix); it stays in the server's log and the redacted trace. A
// model's refusal is the exception: the model wrote it for the user, and it says why there
// is no answer.
package failure

import (
	"errors"

	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/userlimit"
)

// The codes. Clients match on them, so they never change.
const (
	// A model call's failures, the same for turns and runs.
	ProviderError       = "provider_error"
	UpstreamTimeout     = "upstream_timeout"
	UpstreamUnavailable = "upstream_unavailable"
	RateLimited         = "rate_limited"
	ModelRefused        = "model_refused"
	OutputTruncated     = "output_truncated"
	BudgetExhausted     = "budget_exhausted"

	// A chat turn's own.
	ReplyInvalid  = "reply_invalid"
	ReplyTooLarge = "reply_too_large"
	Cancelled     = "cancelled"
	Interrupted   = "interrupted"
	InternalError = "internal_error"

	// A JSON skill run's own.
	SkillOutputInvalid          = "skill_output_invalid"
	LanguageViolationAfterRetry = "reasoning_language_violation_after_retry"
	InvalidInput                = "invalid_input"
)

// ModelCall lists the codes of a model call's failures.
func ModelCall() []string {
	return []string{ProviderError, UpstreamTimeout, UpstreamUnavailable, RateLimited, ModelRefused, OutputTruncated, BudgetExhausted}
}

// Turn lists every code a chat turn can end with.
func Turn() []string {
	return append(ModelCall(), ReplyInvalid, ReplyTooLarge, Cancelled, Interrupted, InternalError)
}

// Run lists every code a JSON skill run can fail with.
func Run() []string {
	return append(ModelCall(), SkillOutputInvalid, LanguageViolationAfterRetry, InvalidInput)
}

// maxRefusal bounds the refusal a message carries.
const maxRefusal = 1000

// Of maps the failure of a model call to its code and the message a client is told; ok is
// false for an error that is no model call's failure.
func Of(err error) (code, message string, ok bool) {
	var ue *upstream.Error
	var exhausted *userlimit.ExhaustedError
	switch {
	case errors.As(err, &exhausted):
		return BudgetExhausted, "The day's model-call budget is used; calls resume when the UTC day ends.", true
	case errors.As(err, &ue):
		return byKind(ue)
	case errors.Is(err, upstream.ErrNoTerminal):
		return ProviderError, providerMessage, true
	}
	return "", "", false
}

const providerMessage = "The model provider failed to produce an answer."

// Refusal is the model's refusal when err is one, in its words (bounded), else "".
func Refusal(err error) string {
	var ue *upstream.Error
	if errors.As(err, &ue) && ue.Kind == upstream.KindRefused {
		return clip(ue.Message, maxRefusal)
	}
	return ""
}

// byKind maps an upstream failure's kind.
func byKind(ue *upstream.Error) (string, string, bool) {
	switch ue.Kind {
	case upstream.KindRateLimited:
		return RateLimited, "The model provider is rate limiting requests. Please try again in a moment.", true
	case upstream.KindUnavailable:
		return UpstreamUnavailable, "The model provider could not be reached. Please try again later.", true
	case upstream.KindTimeout:
		return UpstreamTimeout, "The model provider did not answer in time.", true
	case upstream.KindRefused:
		return ModelRefused, "The model declined to answer: " + Refusal(ue), true
	case upstream.KindTruncated:
		return OutputTruncated, "The answer was cut at the model's output limit.", true
	}
	return ProviderError, providerMessage, true
}

// clip shortens s to at most n bytes, on a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
