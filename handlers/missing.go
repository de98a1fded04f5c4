package handlers

import (
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/phases"
)

// missingQuestion is the MissingQuestion of every handler: the phase's skill
// <phase>/missing in the locale, whose first paragraph is the question and whose list lines
// "- `field`: label" name each field in words. The question is followed by the labels of
// the missing fields, one a line, in the order given; a field without a label is named as
// is.
func missingQuestion(p phases.Phase, s Skills, locale string, missing []string) (string, error) {
	text, err := s.Text(skillName(p, "missing"), locale)
	if err != nil {
		return "", fmt.Errorf("handlers: %s missing fields: %w", p, err)
	}
	question, labels := parseMissing(text)
	lines := []string{question}
	for _, f := range missing {
		label, ok := labels[f]
		if !ok {
			label = f
		}
		lines = append(lines, "- "+label)
	}
	return strings.Join(lines, "\n"), nil
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
