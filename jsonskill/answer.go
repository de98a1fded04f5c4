package jsonskill

import (
	"bytes"
	"errors"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxAnswerBytes bounds a model answer: a longer one is not parsed (skill_output_invalid
// after the correction retry), and the call stops reading once past it.
const maxAnswerBytes = 256 << 10

// Why an answer held no usable object; each has a text in problems/ telling the model.
var (
	errNoObject   = errors.New("no JSON object")
	errIncomplete = errors.New("the JSON object is not complete")
	errTooLarge   = errors.New("the answer is too large")
)

// readAnswer takes the answer's JSON object, in both output modes: one surrounding code
// fence stripped, then the first complete top-level object (its braces balanced outside
// strings), decoded once for the schema and the rules. repaired reports text around the
// object, the fence included. A cost linear in the answer's length.
func readAnswer(text string) (obj []byte, doc map[string]any, repaired bool, err error) {
	if len(text) > maxAnswerBytes {
		return nil, nil, false, errTooLarge
	}
	trimmed := strings.TrimSpace(text)
	inner := unfence(trimmed)
	start := strings.IndexByte(inner, '{')
	if start < 0 {
		return nil, nil, false, errNoObject
	}
	end := objectEnd(inner, start)
	if end < 0 {
		return nil, nil, false, errIncomplete
	}
	obj = []byte(inner[start:end])
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(obj))
	if err != nil {
		return nil, nil, false, err
	}
	doc, _ = inst.(map[string]any) // obj starts with '{' and decoded: an object
	return obj, doc, inner != trimmed || strings.TrimSpace(inner[:start]+inner[end:]) != "", nil
}

// unfence strips one code fence around s: a first line of three backticks (with a language
// such as json) and a last line of three backticks.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	_, body, ok := strings.Cut(s, "\n")
	if !ok {
		return s
	}
	return strings.TrimSpace(strings.TrimSuffix(body, "```"))
}

// objectEnd returns the index just past the object starting at s[start] ('{'), or -1 when
// it never closes.
func objectEnd(s string, start int) int {
	depth, inString, escaped := 0, false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}
