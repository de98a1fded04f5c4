package failure

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/userlimit"
)

func TestOf(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		code   string
		saying string
	}{
		{"a rate limit", &upstream.Error{Kind: upstream.KindRateLimited, Message: "Rate limit reached for sk-abc"}, RateLimited, "try again in a moment"},
		{"a billing stop is the provider's", &upstream.Error{Kind: upstream.KindProvider, HTTPStatus: 429, UpstreamCode: "insufficient_quota"}, ProviderError, "failed to produce"},
		{"down", &upstream.Error{Kind: upstream.KindUnavailable}, UpstreamUnavailable, "could not be reached"},
		{"slow", &upstream.Error{Kind: upstream.KindTimeout}, UpstreamTimeout, "in time"},
		{"a refusal keeps the model's words", &upstream.Error{Kind: upstream.KindRefused, Message: "I can't help with that."}, ModelRefused, "I can't help with that."},
		{"a truncation", &upstream.Error{Kind: upstream.KindTruncated, UpstreamCode: "length"}, OutputTruncated, "output limit"},
		{"the budget, wrapped", fmt.Errorf("call: %w", &userlimit.ExhaustedError{Limit: 5, RetryAfter: time.Hour}), BudgetExhausted, "budget"},
		{"a stream with no end", upstream.ErrNoTerminal, ProviderError, "failed to produce"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, message, ok := Of(tc.err)
			if !ok || code != tc.code || !strings.Contains(message, tc.saying) {
				t.Errorf("Of = %s %q %v, want %s saying %q", code, message, ok, tc.code, tc.saying)
			}
			if strings.Contains(message, "sk-abc") {
				t.Errorf("a provider's text reached the message: %q", message)
			}
		})
	}
	if _, _, ok := Of(errors.New("disk full")); ok {
		t.Error("an error that is no model call's failure was mapped")
	}
	long := strings.Repeat("no ", 1000)
	if _, message, _ := Of(&upstream.Error{Kind: upstream.KindRefused, Message: long}); len(message) > maxRefusal+100 {
		t.Errorf("a long refusal made a %d-byte message", len(message))
	}
}
