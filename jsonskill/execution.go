package jsonskill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/phaseflow/phaseflow/jsonskill/terminal"
	"github.com/phaseflow/phaseflow/store"
)

// The reasons of a model call, as the metrics count them.
const reasonFirst, reasonWiden, reasonCorrection = "first", "widen", "correction"

// CallReasons lists why a run calls the model, as the metrics count the calls.
func CallReasons() []string { return []string{reasonFirst, reasonWiden, reasonCorrection} }

// execution is one run in progress.
type execution struct {
	r      *Runner
	sk     *Skill
	req    Request
	in     Input
	locale string
	meta   meta
	// retried says the run's one correction retry is spent.
	retried bool
	// lastValid is the last answer that matched the output schema.
	lastValid json.RawMessage
	snapshot  terminal.Snapshot
}

// outcome is how a run ended: its output, and the error code and message of a failed one.
type outcome struct {
	output        json.RawMessage
	code, message string
}

func (r *Runner) newExecution(sk *Skill, req Request, in Input) *execution {
	locale := req.Locale
	if !sk.hasLocale(locale) {
		locale = "en"
	}
	return &execution{r: r, sk: sk, req: req, in: in, locale: locale}
}

// run is the run's outline: prepare the snapshot, answer by the rules what they read with
// certainty (an agent at work, a question on screen), else ask the model, widening the
// window while the answer says the question is cut off.
func (ex *execution) run(ctx context.Context) outcome {
	if snap := ex.sk.rules.Snapshot; snap != nil {
		text, _ := ex.in.fields[snap.Field].(string)
		ex.snapshot = terminal.Prepare(text, ex.sk.text("typing", ex.locale), snap.MaxLines)
		if out, ok := ex.readByRules(); ok {
			return out
		}
	}
	ex.meta.DecidedBy = "model"
	windows := ex.windows()
	var out outcome
	for i, w := range windows {
		reason := reasonFirst
		if i > 0 {
			reason = reasonWiden
		}
		if w > 0 {
			ex.meta.WindowLines = append(ex.meta.WindowLines, w)
		}
		out = ex.ask(ctx, ex.userPrompt(w), reason)
		if out.code != "" || ctx.Err() != nil || !incomplete(out.output) {
			break
		}
	}
	return out
}

// windows are the window sizes to send: the widening sequence for a snapshot, or one
// call (0: no window) for any other skill.
func (ex *execution) windows() []int {
	if ex.sk.rules.Snapshot == nil || len(ex.sk.rules.Widen) == 0 {
		return []int{0}
	}
	return terminal.Windows(len(ex.snapshot.Lines), ex.sk.rules.Widen)
}

// incomplete reports an answer saying the question is cut off (context_complete: false).
func incomplete(output json.RawMessage) bool {
	var v struct {
		Complete *bool `json:"context_complete"`
	}
	return json.Unmarshal(output, &v) == nil && v.Complete != nil && !*v.Complete
}

// ask makes one model call with prompt and, when its answer is refused and the run's
// retry is not spent, the correction retry naming what was wrong. No loop: two calls at
// most, whatever the cause.
func (ex *execution) ask(ctx context.Context, prompt, reason string) outcome {
	correction := ""
	for {
		answer, err := ex.call(ctx, prompt, correction, reason)
		var prob *problem
		switch {
		case errors.Is(err, errTooLarge):
			prob = ex.parseProblem(err)
		case err != nil:
			return ex.failed(err, answer)
		default:
			prob = ex.check(answer)
		}
		if prob == nil {
			return outcome{output: ex.lastValid}
		}
		ex.meta.Refused = append(ex.meta.Refused, prob.summary)
		if ex.retried {
			return outcome{output: ex.lastValid, code: prob.code, message: prob.message}
		}
		ex.retried, reason = true, reasonCorrection
		correction = prob.note
		if prob.rule == ruleLanguage {
			ex.meta.languageRetry()
		}
	}
}

// record is the run to store for out.
func (ex *execution) record(out outcome) (*store.SkillRun, error) {
	run := &store.SkillRun{
		UserID: ex.req.UserID, Skill: ex.sk.Name, Version: ex.sk.Version, Status: store.RunSucceeded,
		Locale: ex.locale, SourceID: ex.req.SourceID, Input: store.JSON(ex.in.raw), Output: store.JSON(out.output),
	}
	if out.code != "" {
		run.Status = store.RunFailed
		e, err := json.Marshal(map[string]string{"code": out.code, "message": out.message})
		if err != nil {
			return nil, fmt.Errorf("jsonskill: encode the run's error: %w", err)
		}
		run.Error = e
	}
	meta, err := json.Marshal(ex.meta)
	if err != nil {
		return nil, fmt.Errorf("jsonskill: encode the run's meta: %w", err)
	}
	run.Meta = meta
	if ex.sk.rules.Dedup && ex.req.SourceID != "" && out.code == "" {
		run.Fingerprint = waitFingerprint(out.output)
	}
	return run, nil
}

// waitFingerprint is what a run tells the de-duplication: a has_question answer's
// fingerprint, or for any other answer the mark "~" and its status, which no question's
// fingerprint can be (the output schema allows only letters, digits and hyphens). A question
// is new unless its source's latest answer asked it: work or an idle screen in between ends
// the wait, so the same question asked again afterwards is notified again.
func waitFingerprint(output json.RawMessage) string {
	var v struct {
		Status      string `json:"status"`
		Fingerprint string `json:"fingerprint"`
	}
	switch {
	case json.Unmarshal(output, &v) != nil || v.Status == "":
		return ""
	case v.Status == "has_question":
		return v.Fingerprint
	}
	return store.StateMark + v.Status
}

// userPrompt renders the skill's user template: a snapshot skill's {{terminal}} is the
// last window lines; every other input field fills its placeholder, a string as is and
// anything else as JSON in {{<field>_block}} (absent: empty, [] or {} by its schema type).
func (ex *execution) userPrompt(window int) string {
	values := map[string]string{}
	for name, prop := range ex.sk.inputTypes {
		v, ok := ex.in.fields[name]
		switch s, isString := v.(string); {
		case isString:
			values[name] = s
		case ok:
			b, err := json.Marshal(v)
			if err == nil {
				values[name+"_block"] = string(b)
			}
		case prop == "array":
			values[name+"_block"] = "[]"
		case prop == "object":
			values[name+"_block"] = "{}"
		}
	}
	if snap := ex.sk.rules.Snapshot; snap != nil {
		values[snap.Field] = ex.snapshot.Last(window)
	}
	return render(ex.sk.text("user", ex.locale), values)
}

// render fills the {{placeholders}} of text in one pass (a value holding "{{x}}" is not
// filled again); a placeholder without a value becomes empty.
func render(text string, values map[string]string) string {
	var b strings.Builder
	for {
		i := strings.Index(text, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(text[i:], "}}")
		if j < 0 {
			break
		}
		b.WriteString(text[:i])
		b.WriteString(values[strings.TrimSpace(text[i+2:i+j])])
		text = text[i+j+2:]
	}
	b.WriteString(text)
	return b.String()
}

// placeholders lists the names of the {{placeholders}} of text, sorted, for the tests.
func placeholders(text string) []string {
	var out []string
	for {
		i := strings.Index(text, "{{")
		j := strings.Index(text[max(i, 0):], "}}")
		if i < 0 || j < 0 {
			break
		}
		out = append(out, strings.TrimSpace(text[i+2:i+j]))
		text = text[i+j+2:]
	}
	slices.Sort(out)
	return out
}
