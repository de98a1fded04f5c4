package jsonskill

import (
	"context"
	"errors"
	"strings"

	"github.com/phaseflow/phaseflow/upstream"
)

// errCallTimeout is a model call that ran past its timeout.
var errCallTimeout = errors.New("jsonskill: the model call timed out")

// call makes one model call: the system prompt (with the correction note when set) and the
// user prompt, at temperature 0 and with no tools, in the endpoint's output mode. It returns
// the answer's text; errTooLarge once it grows past maxAnswerBytes (the call is stopped).
func (ex *execution) call(ctx context.Context, prompt, correction, reason string) (string, error) {
	ex.meta.Attempts++
	if m := ex.r.opts.Metrics; m != nil {
		m.SkillModelCall(ex.sk.Name, reason)
	}
	cctx, cancel := context.WithTimeout(ctx, ex.r.callTimeout(ex.sk))
	defer cancel()
	system := ex.sk.text("system", ex.locale)
	if correction != "" {
		system += " " + correction
	}
	zero := 0.0
	req := upstream.Request{
		Instructions: system, Input: []upstream.InputItem{{Role: "user", Content: prompt}}, Temperature: &zero, Owner: ex.req.UserID,
		JSON: &upstream.JSONOutput{Name: ex.sk.Name, Schema: ex.sk.strict, TextRules: ex.sk.text("text_json_rules", ex.locale)},
	}
	var b strings.Builder
	for ev, err := range ex.r.model.Stream(cctx, req) {
		switch {
		case err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
			return "", errCallTimeout
		case err != nil:
			return "", err
		case ev.Kind == upstream.EventTextDelta:
			if b.Len()+len(ev.Delta) > maxAnswerBytes {
				return "", errTooLarge
			}
			b.WriteString(ev.Delta)
		case ev.Kind == upstream.EventCreated || ev.Kind == upstream.EventCompleted:
			ex.meta.endpoint(ev)
		}
	}
	return b.String(), nil
}

// failure is the outcome of a call that failed: the upstream error codes of a chat turn.
func failure(err error) outcome {
	var ue *upstream.Error
	switch {
	case errors.Is(err, errCallTimeout):
		return outcome{code: CodeUpstreamTimeout, message: "The model did not answer within the skill's time limit."}
	case errors.As(err, &ue) && ue.Kind == upstream.KindRateLimited:
		return outcome{code: CodeRateLimited, message: "The model provider is rate limiting requests. Please try again in a moment."}
	case errors.As(err, &ue) && ue.Kind == upstream.KindUnavailable:
		return outcome{code: CodeUpstreamUnavailable, message: "The model provider could not be reached. Please try again later."}
	case errors.As(err, &ue) && ue.Kind == upstream.KindTimeout:
		return outcome{code: CodeUpstreamTimeout, message: "The model provider did not answer in time."}
	}
	return outcome{code: CodeProviderError, message: "The model provider failed to produce an answer."}
}
