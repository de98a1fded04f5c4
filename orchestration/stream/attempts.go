package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// maxAttempts is the first attempt plus at most one correction retry.
const maxAttempts = 2

// Policy is what a turn does with a reply that fails its checks.
type Policy string

// The reply policies.
const (
	PolicyRetry  Policy = "retry"  // ask once more with a correction note; fail the turn if it fails again
	PolicyReport Policy = "report" // keep the reply, record the findings, apply nothing from it
	PolicyOff    Policy = "off"    // do not check replies at all
)

// Check is the verdict on one attempt's reply: the validation result and every problem
// (validation errors and a language mismatch). No issues: acceptable.
type Check struct {
	Validation thinkingml.Result
	// Language is the reply-language verdict, kept for the turn's record whether it
	// passed or not (docs/phases.md).
	Language *thinkingml.LanguageResult
	Issues   []thinkingml.Issue
}

// Rules are how a turn judges its attempts.
type Rules struct {
	Policy Policy
	// Judge checks a reply (postprocess.Check); unused under PolicyOff.
	Judge func(text string) Check
	// Fallback is the reply streamed in the model's place when an attempt sent none.
	Fallback func() (string, error)
}

// Requests builds the upstream request of an attempt; correction lists why the previous
// attempt was refused (nil on the first).
type Requests func(correction []thinkingml.Issue) (*upstream.Request, error)

// Outcome is what a turn's attempts produced.
type Outcome struct {
	Result   Result // the kept attempt (the last one when they failed)
	Check    Check  // its check (zero under PolicyOff)
	Attempts int
	// Refused lists why each refused attempt was refused, in order.
	Refused  [][]thinkingml.Issue
	Fallback bool // the model sent nothing and the fallback reply stands in
	// Calls lists the MCP calls of every attempt in the order they ended, each with its
	// attempt number: those of a refused attempt and of an attempt cut short too, since
	// each one really ran. Result.ToolCalls are the kept attempt's alone.
	Calls []store.ToolCall
	// events counts what the attempts sent the client, against Limits.Events.
	events int
}

// Accepted reports whether the kept reply passed its checks (always under PolicyOff).
func (o Outcome) Accepted() bool { return len(o.Check.Issues) == 0 }

// RefusedError ends a turn whose reply failed its checks on every attempt.
type RefusedError struct{ Refused [][]thinkingml.Issue }

// Error lists the last attempt's problems.
func (e *RefusedError) Error() string {
	if len(e.Refused) == 0 {
		return "the reply failed its checks"
	}
	last := e.Refused[len(e.Refused)-1]
	msgs := make([]string, len(last))
	for i, is := range last {
		msgs[i] = string(is.Code)
	}
	return "the reply failed its checks twice: " + strings.Join(msgs, ", ")
}

// Attempts streams the turn's reply, judging each attempt by rules: an acceptable reply (or
// any reply under the report and off policies) ends the turn; a refused one is asked for
// once more with a correction note (status retrying), and a second refusal is a
// *RefusedError. An upstream failure ends the attempts at once, with the partial result.
// The outcome is never nil.
func (h *Handler) Attempts(ctx context.Context, requests Requests, sink Sink, rules Rules) (*Outcome, error) {
	out := &Outcome{}
	var correction []thinkingml.Issue
	for out.Attempts = 1; ; out.Attempts++ {
		if err := h.next(ctx, requests, correction, sink, out); err != nil {
			return out, err
		}
		var done bool
		var err error
		if correction, done, err = out.judge(ctx, sink, rules); done {
			return out, err
		}
	}
}

// judge decides on the attempt just streamed into o: done with the turn's error (nil for
// a reply that stands), or not done with the correction the next attempt is asked for
// (status retrying is out). It is kept out of Attempts (never inlined): Attempts waits on
// every attempt, and the judging's temporaries would sit on that stack all the while.
//
//go:noinline
func (o *Outcome) judge(ctx context.Context, sink Sink, rules Rules) (correction []thinkingml.Issue, done bool, err error) {
	if err := o.fillEmpty(ctx, sink, rules); err != nil {
		return nil, true, err
	}
	if rules.Policy == PolicyOff {
		return nil, true, nil
	}
	o.Check = rules.Judge(o.Result.Text)
	if o.Accepted() || rules.Policy == PolicyReport {
		return nil, true, nil
	}
	o.Refused = append(o.Refused, o.Check.Issues)
	if o.Attempts == maxAttempts {
		return nil, true, &RefusedError{Refused: o.Refused}
	}
	correction = o.Check.Issues
	if err := sink.Retrying(ctx, o.Attempts+1, reason(correction)); err != nil {
		return nil, true, err
	}
	return correction, false, nil
}

// next streams attempt out.Attempts into out. It waits on the upstream for as long as the
// reply streams, and every frame above it waits too: Attempts stays small, and a
// generation's goroutine on a small stack, which is most of what a waiting generation holds.
func (h *Handler) next(ctx context.Context, requests Requests, correction []thinkingml.Issue, sink Sink, out *Outcome) error {
	req, err := requests(correction)
	if err != nil {
		return err
	}
	out.Result = Result{} // the attempt's own, nothing of the one before
	err = h.run(ctx, req, sink, out.Attempts, &out.Result, &out.events)
	out.addCalls()
	return err
}

// addCalls stamps the latest attempt's calls with its number and adds them to Calls.
func (o *Outcome) addCalls() {
	for i := range o.Result.ToolCalls {
		o.Result.ToolCalls[i].Attempt = o.Attempts
	}
	o.Calls = append(o.Calls, o.Result.ToolCalls...)
}

// fillEmpty answers in the model's place when its reply was empty: the fallback is a valid
// ThinkingML reply in the session's locale, streamed like any reply.
func (o *Outcome) fillEmpty(ctx context.Context, sink Sink, rules Rules) error {
	if strings.TrimSpace(o.Result.Text) != "" || rules.Fallback == nil {
		return nil
	}
	text, err := rules.Fallback()
	if err != nil {
		return err
	}
	if err := sink.Delta(ctx, text); err != nil {
		return err
	}
	o.Result.Text, o.Fallback = text, true
	return nil
}

// reason is the retrying event's reason: the refused attempt's problems.
func reason(issues []thinkingml.Issue) string {
	parts := make([]string, len(issues))
	for i, is := range issues {
		parts[i] = fmt.Sprintf("%s: %s", is.Code, is.Message)
	}
	return strings.Join(parts, "; ")
}

// arguments keeps a call's arguments as JSON when they are JSON, as a JSON string otherwise,
// and {} when there are none.
func arguments(s string) store.JSON {
	if s == "" {
		return store.JSON(`{}`)
	}
	if json.Valid([]byte(s)) {
		return store.JSON(s)
	}
	b, err := json.Marshal(s)
	if err != nil { // a Go string always encodes; were it not to, the record keeps its place
		return store.JSON(`{}`)
	}
	return store.JSON(b)
}
