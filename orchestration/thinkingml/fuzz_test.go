package thinkingml

import (
	"regexp"
	"strings"
	"testing"
)

// hasForeignTag is an independent, deliberately simple reading of docs/thinkingml.md: outside
// complete comments, is there anything shaped like a tag whose name is not one of the six?
// A comment becomes a NUL rather than nothing, so the text on its two sides cannot join into
// a tag shape that is not in the reply ("<A<!--x--> " holds no tag). It shares no code with
// the validator.
func hasForeignTag(s string) bool {
	comment := regexp.MustCompile(`(?s)<!--.*?-->`)
	tag := regexp.MustCompile(`</?([A-Za-z][A-Za-z0-9_.\-]*)(?:[ \t\r\n]|>|/>)`)
	for _, m := range tag.FindAllStringSubmatch(comment.ReplaceAllString(s, "\x00"), -1) {
		switch m[1] {
		case "think", "serp", "thinking", "phase", "title", "final":
		default:
			return true
		}
	}
	return false
}

func FuzzValidate(f *testing.F) {
	for _, tc := range validateCases() {
		f.Add(tc.reply)
	}
	f.Add(reply(okPhase, okFinal) + "<!-- <div> -->")
	f.Add("<thinking><phase id=\"1\"><title>t</title></phase></thinking><final>a\n" + okBlock + "</final>")
	f.Fuzz(func(t *testing.T, s string) {
		for _, opts := range []Options{{}, {SerpQueriesOptional: true}} {
			res := Validate(s, opts)
			if res.Valid != (len(res.Errors) == 0) {
				t.Fatalf("Valid = %v with %d errors", res.Valid, len(res.Errors))
			}
			if res.Valid && hasForeignTag(s) {
				t.Fatalf("valid although the reply holds a tag that is not allowed: %q", s)
			}
			for _, is := range append(res.Errors, res.Warnings...) {
				if is.Line < 1 || is.Column < 1 || strings.ContainsAny(is.Message, "\n\r") {
					t.Fatalf("bad issue %+v for %q", is, s)
				}
				// The scanner's escaping must always give etree good XML, and every parse
				// failure must be explained by the tag nesting: the generic fallbacks mean a
				// bug in this package, not in the reply.
				if strings.Contains(is.Message, "internal error") || strings.Contains(is.Message, "not well-formed XML") {
					t.Fatalf("fallback diagnosis %+v for %q", is, s)
				}
			}
		}
	})
}
