package stream

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/upstream"
)

// replies plays one reply per request, in order.
type replies struct {
	texts    []string
	requests []upstream.Request
}

func (r *replies) Stream(_ context.Context, req upstream.Request) iter.Seq2[upstream.Event, error] {
	r.requests = append(r.requests, req)
	text := r.texts[len(r.requests)-1]
	return func(yield func(upstream.Event, error) bool) {
		if text != "" && !yield(upstream.Event{Kind: upstream.EventTextDelta, Delta: text}, nil) {
			return
		}
		yield(upstream.Event{Kind: upstream.EventCompleted}, nil)
	}
}

// judge refuses replies that contain "bad".
func judge(text string) Check {
	if strings.Contains(text, "bad") {
		return Check{Issues: []thinkingml.Issue{{Code: thinkingml.CodeMalformedXML, Message: "broken"}}}
	}
	return Check{Validation: thinkingml.Result{Valid: true}}
}

func TestAttempts(t *testing.T) {
	cases := []struct {
		name         string
		policy       Policy
		texts        []string
		wantAttempts int
		wantRefused  bool // the turn ends with a *RefusedError
		wantRetries  int
		wantText     string
		wantFallback bool
	}{
		{"a valid reply is kept", PolicyRetry, []string{"good"}, 1, false, 0, "good", false},
		{"refused then retried", PolicyRetry, []string{"bad", "good"}, 2, false, 1, "good", false},
		{"refused twice", PolicyRetry, []string{"bad", "bad again"}, 2, true, 1, "bad again", false},
		{"report keeps a refused reply", PolicyReport, []string{"bad"}, 1, false, 0, "bad", false},
		{"off checks nothing", PolicyOff, []string{"bad"}, 1, false, 0, "bad", false},
		{"an empty reply gets the fallback", PolicyRetry, []string{""}, 1, false, 0, "fallback reply", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, s := &replies{texts: tc.texts}, &sink{}
			var corrections [][]thinkingml.Issue
			requests := func(c []thinkingml.Issue) (*upstream.Request, error) {
				corrections = append(corrections, c)
				return &upstream.Request{}, nil
			}
			rules := Rules{Policy: tc.policy, Judge: judge, Fallback: func() (string, error) { return "fallback reply", nil }}
			out, err := New(up, 0, Limits{}).Attempts(context.Background(), requests, s, rules)
			var refused *RefusedError
			if errors.As(err, &refused) != tc.wantRefused || (err != nil && !tc.wantRefused) {
				t.Fatalf("Attempts error = %v, want refused %v", err, tc.wantRefused)
			}
			if out.Attempts != tc.wantAttempts || len(s.retries) != tc.wantRetries || out.Result.Text != tc.wantText || out.Fallback != tc.wantFallback {
				t.Fatalf("outcome %+v, retries %v; want %d attempts, %d retries, text %q", out, s.retries, tc.wantAttempts, tc.wantRetries, tc.wantText)
			}
			if tc.wantRetries > 0 && (len(corrections[1]) == 0 || corrections[1][0].Code != thinkingml.CodeMalformedXML) {
				t.Fatalf("the retry's request carries no correction: %v", corrections)
			}
		})
	}
}

func TestFailure(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code string
	}{
		{"rate limited", &upstream.Error{Kind: upstream.KindRateLimited, Message: "Rate limit reached for sk-abc"}, failure.RateLimited},
		{"unavailable", &upstream.Error{Kind: upstream.KindUnavailable}, failure.UpstreamUnavailable},
		{"timeout", &upstream.Error{Kind: upstream.KindTimeout}, failure.UpstreamTimeout},
		{"provider", &upstream.Error{Kind: upstream.KindProvider, Message: "Incorrect API key provided: sk-abc"}, failure.ProviderError},
		{"idle", ErrIdle, failure.UpstreamTimeout},
		{"no terminal event", upstream.ErrNoTerminal, failure.ProviderError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, msg, ok := Failure(tc.err)
			if !ok || code != tc.code || msg == "" || strings.Contains(msg, "sk-") {
				t.Fatalf("Failure = %q %q %v, want %s with a stable message", code, msg, ok, tc.code)
			}
		})
	}
	if _, _, ok := Failure(errors.New("database gone")); ok {
		t.Error("a non-upstream error was taken for an upstream failure")
	}
}
