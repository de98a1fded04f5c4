package jsonskill

import (
	"encoding/json"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/jsonskill/terminal"
)

// readByRules answers a snapshot skill's run by the rules when they read the screen with
// certainty (docs/json-skills.md: fewer tokens, lower latency): an agent at work, or a question
// the screen states with one reading. ok is false when the model must read it.
func (ex *execution) readByRules() (outcome, bool) {
	if !ex.sk.rules.RulesFirst {
		return outcome{}, false
	}
	r := terminal.Read(ex.snapshot)
	if r.Agent != "" {
		ex.meta.Screen = &screenMeta{Agent: string(r.Agent)}
	}
	switch r.State {
	case terminal.Busy:
		return ex.busyAnswer(r.Line), true
	case terminal.Asking:
		return ex.questionAnswer(r.Question), true
	}
	return outcome{}, false
}

// busyAnswer is the rules' answer for an agent at work: no model call, no question.
func (ex *execution) busyAnswer(line string) outcome {
	return ex.rulesAnswer(map[string]any{
		"status": "processing", "context_complete": true, "message": "", "fingerprint": "",
		"message_type": "open_ended", "options": []string{}, "agent_status": "waiting", "last_action": line,
	})
}

// questionAnswer is the rules' answer for a question read on screen: docs/json-skills.md's message
// and fingerprint, the options, and in meta what waits for approval and the keys of each
// option.
func (ex *execution) questionAnswer(q terminal.Question) outcome {
	hints := terminal.Hints{Choice: ex.sk.text("reply_choice", ex.locale),
		Confirmation: ex.sk.text("reply_confirmation", ex.locale), Open: ex.sk.text("reply_open", ex.locale)}
	labels := make([]string, 0, len(q.Options))
	if ex.meta.Screen == nil {
		ex.meta.Screen = &screenMeta{}
	}
	ex.meta.Screen.Rule, ex.meta.Screen.Subject = q.Rule, q.Subject
	for _, o := range q.Options {
		labels = append(labels, o.Label)
		ex.meta.Screen.Keys = append(ex.meta.Screen.Keys, o.Keys)
	}
	return ex.rulesAnswer(map[string]any{
		"status": "has_question", "context_complete": true, "message": q.Message(hints), "fingerprint": q.Fingerprint(),
		"message_type": string(q.Kind), "options": labels, "agent_status": "waiting", "last_action": nil,
	})
}

// rulesAnswer is an answer made without a model call.
func (ex *execution) rulesAnswer(answer map[string]any) outcome {
	ex.meta.DecidedBy, ex.meta.OutputModeUsed = "rules", "rules"
	out, err := json.Marshal(answer)
	if err != nil { // strings, bools, nil and slices of them always marshal
		return outcome{code: failure.SkillOutputInvalid, message: err.Error()}
	}
	return outcome{output: out}
}
