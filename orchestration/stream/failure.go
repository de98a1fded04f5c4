package stream

import (
	"errors"

	"github.com/phaseflow/phaseflow/failure"
)

// Failure maps an attempt's failure to what the client is told: the error code and its
// message. The reply's own limits are the stream's; a model call's failures are mapped by
// package failure, the one mapping turns and runs share. ok is false for an error that is
// no upstream failure.
func Failure(err error) (code, message string, ok bool) {
	switch {
	case errors.Is(err, ErrReplyTooLarge):
		return failure.ReplyTooLarge, "The reply grew past the server's size limit; the text so far is kept.", true
	case errors.Is(err, ErrIdle):
		return failure.UpstreamTimeout, "The model provider stopped sending the reply.", true
	}
	return failure.Of(err)
}
