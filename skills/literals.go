package skills

import (
	"regexp"
	"slices"
	"sort"
)

// Literals are the parts of a prompt text the system or the model matches literally, so a
// translation or an admin's new version must carry them unchanged:
//
//   - Code: every inline code span (`…` on one line, outside fenced blocks), which is how
//     the texts write tool names, artifact fields, allowed values, GenUI types and JSON;
//   - Tags: every XML-like tag (<name …>, </name>), fenced blocks included, such as <final>,
//     <AGENT_UI_JSON> or <serp_queries>;
//   - Idents: every identifier with an underscore (snake_case or UPPER_CASE), anywhere, so a
//     field or tool named outside backticks is caught too;
//   - Placeholders: every {{name}}, kept as a multiset because each one is filled.
type Literals struct {
	Code, Tags, Idents, Placeholders []string
}

// literalPatterns are the expressions of [Literals], compiled per call (texts are checked
// at test time and when an admin stores a version, never on a turn).
type literalPatterns struct {
	fence, code, tag, ident, placeholder *regexp.Regexp
}

func newLiteralPatterns() literalPatterns {
	return literalPatterns{
		fence:       regexp.MustCompile("(?ms)^```.*?^```"),
		code:        regexp.MustCompile("`([^`\n]+)`"),
		tag:         regexp.MustCompile(`</?[A-Za-z][A-Za-z0-9_.-]*(?:\s[^<>]*)?/?>`),
		ident:       regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b`),
		placeholder: regexp.MustCompile(`\{\{\s*[A-Za-z_]+\s*\}\}`),
	}
}

// LiteralsOf finds the literals of text.
func LiteralsOf(text string) Literals {
	p := newLiteralPatterns()
	var code []string
	for _, m := range p.code.FindAllStringSubmatch(p.fence.ReplaceAllString(text, ""), -1) {
		code = append(code, m[1])
	}
	placeholders := p.placeholder.FindAllString(text, -1)
	sort.Strings(placeholders)
	return Literals{
		Code:         set(code),
		Tags:         set(p.tag.FindAllString(text, -1)),
		Idents:       set(p.ident.FindAllString(text, -1)),
		Placeholders: placeholders,
	}
}

// set sorts and deduplicates; nil for none, so empty results compare equal.
func set(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	return slices.Compact(s)
}
