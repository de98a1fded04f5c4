package jsonskill

import (
	"errors"
	"strconv"
	"strings"

	"github.com/phaseflow/phaseflow/failure"
)

// ruleLanguage names the reasoning-language rule (docs/json-skills.md) in problems and meta.
const ruleLanguage = "reasoning_language"

// problem is why an answer was refused: what the correction note tells the model, what a
// failed run says, and a line for meta.refused.
type problem struct {
	// note is the whole correction note (the skill's correction text naming the problem, or
	// a rule's own note).
	note string
	// code and message are the failed run's error when the retry is spent.
	code, message string
	// summary is the problem in one line, for meta.refused.
	summary string
	// rule names the rule that failed, "" for a parse or schema problem.
	rule string
}

// check reads an answer and holds it to the output schema and the skill's rules; nil when
// it passes. An answer that matches the schema is kept as the run's output either way.
func (ex *execution) check(answer string) *problem {
	obj, doc, repaired, err := readAnswer(answer)
	if err != nil {
		return ex.parseProblem(err)
	}
	if problems := validateDecoded(ex.sk.output, doc, "/"); len(problems) > 0 {
		text := render(ex.r.catalog.problem("schema", ex.locale), map[string]string{"errors": strings.Join(problems, "; ")})
		return ex.refusal(text, "the answer does not match the output schema: "+strings.Join(problems, "; "))
	}
	ex.lastValid = obj
	ex.meta.Repaired = ex.meta.Repaired || repaired
	return ex.ruleProblem(doc)
}

// parseProblem is an answer with no usable JSON object.
func (ex *execution) parseProblem(err error) *problem {
	name, values := "invalid_json", map[string]string{"error": err.Error()}
	switch {
	case errors.Is(err, errNoObject):
		name = "no_object"
	case errors.Is(err, errTooLarge):
		name, values = "too_large", map[string]string{"limit": strconv.Itoa(maxAnswerBytes)}
	}
	return ex.refusal(render(ex.r.catalog.problem(name, ex.locale), values), "the answer held no valid JSON object: "+err.Error())
}

// refusal is a parse or schema problem: the skill's correction note naming it.
func (ex *execution) refusal(text, summary string) *problem {
	return &problem{
		note: render(ex.sk.text("correction", ex.locale), map[string]string{"problems": text}),
		code: failure.SkillOutputInvalid, message: summary, summary: summary,
	}
}

// ruleProblem applies the skill's rules to a schema-valid answer.
func (ex *execution) ruleProblem(doc map[string]any) *problem {
	if ex.sk.rules.ReasoningLanguage != langZH {
		return nil
	}
	lang := reasoningLanguage(doc["reasoning"])
	ex.meta.language(lang)
	if lang == langZH {
		return nil
	}
	return &problem{
		note: ex.sk.text("rules/"+ruleLanguage, ex.locale), rule: ruleLanguage,
		code:    failure.LanguageViolationAfterRetry,
		message: "the reasoning is not written in Chinese", summary: "the reasoning is not written in Chinese",
	}
}
