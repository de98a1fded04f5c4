package skills

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/phaseflow/phaseflow/internal/langtest"
)

// CheckVersion lists what is wrong with body as a new version of the skill name in locale,
// none when an admin may store it: the name must have an embedded text; the locale's rule
// must hold (no CJK in en, Chinese and no English sentence in zh); it must fill the same
// placeholders as the embedded text, and carry every tag, code span and identifier the
// embedded text has, since the system and the model match those literally (the output
// contract's ThinkingML tags among them). A version that breaks one of these fails the
// next turns, so it is refused when it is stored, not when a user meets it.
func (l Library) CheckVersion(name, locale, body string) []string {
	embedded, ok := l.texts[locale+"/"+name]
	if !ok {
		return []string{fmt.Sprintf("no skill %q in %s: a version replaces an embedded text, so its name must be one (GET /api/v1/llm/prompts lists the stored ones)", name, locale)}
	}
	problems := localeProblems(locale, body, embedded)
	want, got := LiteralsOf(embedded), LiteralsOf(body)
	if !slices.Equal(want.Placeholders, got.Placeholders) {
		problems = append(problems, fmt.Sprintf("placeholders %v, the embedded text fills %v", orNone(got.Placeholders), orNone(want.Placeholders)))
	}
	for _, kind := range []struct {
		what      string
		want, got []string
	}{{"tag", want.Tags, got.Tags}, {"code span", want.Code, got.Code}, {"identifier", want.Idents, got.Idents}} {
		for _, w := range kind.want {
			if !slices.Contains(kind.got, w) {
				problems = append(problems, fmt.Sprintf("missing the %s %s the embedded text has", kind.what, w))
			}
		}
	}
	return problems
}

// localeProblems checks a text against its locale's rule; a zh text needs Chinese where
// the embedded one has prose (the session-state template has none).
func localeProblems(locale, body, embedded string) []string {
	switch locale {
	case "en":
		for i, line := range strings.Split(body, "\n") {
			if strings.IndexFunc(line, isCJK) >= 0 {
				return []string{fmt.Sprintf("line %d: CJK characters in an en text", i+1)}
			}
		}
	case "zh":
		if strings.IndexFunc(body, isCJK) < 0 && strings.IndexFunc(embedded, isCJK) >= 0 {
			return []string{"no Chinese in a zh text"}
		}
		if runs := langtest.EnglishRuns(body); len(runs) > 0 {
			return []string{fmt.Sprintf("English prose in a zh text: %q", runs[0])}
		}
	}
	return nil
}

// isCJK reports ideographs, kana, hangul and the CJK and full-width punctuation blocks, the
// characters that give away an untranslated piece of Chinese.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}

func orNone(s []string) any {
	if len(s) == 0 {
		return "none"
	}
	return s
}
