package jsonskill

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/upstream"
)

// errCallTimeout is a model call that ran past its timeout.
var errCallTimeout = errors.New("jsonskill: the model call timed out")

// call makes one model call: the system prompt (with the correction note when set) and the
// user prompt, at temperature 0, with no tools and the skill's output limit, in the
// endpoint's output mode. It returns the answer's text (with a failure, the text that came
// before it, a truncated answer's); errTooLarge once it grows past maxAnswerBytes (the call
// is stopped).
func (ex *execution) call(ctx context.Context, prompt, correction, reason string) (string, error) {
	ex.meta.Attempts++
	if m := ex.r.opts.Metrics; m != nil {
		m.SkillModelCall(ex.sk.Name, reason)
	}
	cctx, cancel := context.WithTimeout(ctx, ex.r.callTimeout(ex.sk))
	defer cancel()
	zero := 0.0
	req := upstream.Request{
		Instructions: ex.systemPrompt(correction), Input: []upstream.InputItem{{Role: "user", Content: prompt}},
		Temperature: &zero, MaxOutputTokens: ex.r.maxOutputTokens(ex.sk), Owner: ex.req.UserID,
		JSON: &upstream.JSONOutput{Name: ex.sk.Name, Schema: ex.sk.strict, TextRules: ex.sk.text("text_json_rules", ex.locale)},
	}
	var b strings.Builder
	for ev, err := range ex.r.model.Stream(cctx, req) {
		switch {
		case err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
			return b.String(), errCallTimeout
		case err != nil:
			return b.String(), err
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

// systemPrompt is the skill's system prompt with the correction note in its place: where
// the prompt holds {{correction}} (post_views, as docs/json-skills.md orders it: the retry rule
// before the strict-JSON hint), else at its end.
func (ex *execution) systemPrompt(correction string) string {
	system := ex.sk.text("system", ex.locale)
	const slot = "{{correction}}"
	switch {
	case strings.Contains(system, slot) && correction == "":
		return strings.Replace(strings.Replace(system, " "+slot, "", 1), slot, "", 1)
	case strings.Contains(system, slot):
		return strings.Replace(system, slot, correction, 1)
	case correction != "":
		return system + " " + correction
	}
	return system
}

// failed is the outcome of a call that failed, in the vocabulary turns and runs share. A
// refusal keeps the model's words and a truncation the text that came, in meta; neither is
// retried, since the same request would be refused or cut again.
func (ex *execution) failed(err error, partial string) outcome {
	if errors.Is(err, errCallTimeout) {
		return outcome{code: failure.UpstreamTimeout, message: "The model did not answer within the skill's time limit."}
	}
	code, message, ok := failure.Of(err)
	if !ok {
		code, message, _ = failure.Of(&upstream.Error{Kind: upstream.KindProvider})
	}
	var ue *upstream.Error
	switch {
	case code == failure.ModelRefused && errors.As(err, &ue):
		ex.meta.Refusal = ue.Message
	case code == failure.OutputTruncated:
		ex.meta.Partial = partial
		message = fmt.Sprintf("The answer was cut at the output limit of %d tokens (the skill's max_output_tokens, "+
			"or PHASEFLOW_SKILL_MAX_OUTPUT_TOKENS); raise it if the answer needs more.", ex.r.maxOutputTokens(ex.sk))
	}
	return outcome{code: code, message: message}
}
