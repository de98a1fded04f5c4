package handlers

import (
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/phases"
)

// Missing is what a phase still needs, in words of the session's locale: the question and
// each missing field's label, in the order the fields were given.
type Missing struct {
	Question string
	Fields   []string
	Labels   []string
}

// Text is the question followed by the labels, one a line ("- label"): what a reader of
// the card's question alone sees.
func (m Missing) Text() string {
	lines := []string{m.Question}
	for _, l := range m.Labels {
		lines = append(lines, "- "+l)
	}
	return strings.Join(lines, "\n")
}

// missingQuestion is the MissingQuestion of every handler: the phase's skill
// <phase>/missing in the locale, whose first paragraph is the question and whose list lines
// "- `field`: label" name each field in words. A field without a label is named as is.
func missingQuestion(p phases.Phase, s Skills, locale string, missing []string) (Missing, error) {
	text, err := s.Text(skillName(p, "missing"), locale)
	if err != nil {
		return Missing{}, fmt.Errorf("handlers: %s missing fields: %w", p, err)
	}
	question, labels := parseMissing(text)
	m := Missing{Question: question, Fields: missing}
	for _, f := range missing {
		label, ok := labels[f]
		if !ok {
			label = f
		}
		m.Labels = append(m.Labels, label)
	}
	return m, nil
}

// parseMissing splits a missing-fields skill into its question (the text before the list)
// and its labels by field.
func parseMissing(text string) (string, map[string]string) {
	labels := map[string]string{}
	var question []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		rest, isItem := strings.CutPrefix(line, "- `")
		if !isItem {
			if line != "" && len(labels) == 0 {
				question = append(question, line)
			}
			continue
		}
		field, label, ok := strings.Cut(rest, "`")
		if !ok {
			continue
		}
		label = strings.TrimSpace(strings.TrimLeft(label, ":： "))
		labels[field] = label
	}
	return strings.Join(question, " "), labels
}
