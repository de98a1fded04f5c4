package stream

import (
	"errors"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/upstream"
)

// Failure maps an attempt's failure to what the client is told: the error code and a
// stable, human message per code. A provider's own text never reaches the client (it can
// name its internals, quote the request or echo a key prefix); it stays in the server's
// log through the error itself. ok is false for an error that is no upstream failure.
func Failure(err error) (code, message string, ok bool) {
	var ue *upstream.Error
	switch {
	case errors.Is(err, ErrReplyTooLarge):
		return events.CodeReplyTooLarge, "The reply grew past the server's size limit; the text so far is kept.", true
	case errors.Is(err, ErrIdle):
		return events.CodeUpstreamTimeout, "The model provider stopped sending the reply.", true
	case errors.As(err, &ue):
		return byKind(ue.Kind)
	case errors.Is(err, upstream.ErrNoTerminal):
		return byKind(upstream.KindProvider)
	}
	return "", "", false
}

// byKind is the one mapping from upstream failure kinds to client codes and messages.
func byKind(k upstream.Kind) (string, string, bool) {
	switch k {
	case upstream.KindRateLimited:
		return events.CodeRateLimited, "The model provider is rate limiting requests. Please try again in a moment.", true
	case upstream.KindUnavailable:
		return events.CodeUpstreamUnavailable, "The model provider could not be reached. Please try again later.", true
	case upstream.KindTimeout:
		return events.CodeUpstreamTimeout, "The model provider did not answer in time.", true
	}
	return events.CodeProviderError, "The model provider failed to produce a reply.", true
}
