package jsonskill

import (
	"regexp"
	"unicode/utf8"
)

// The verdicts of the reasoning-language check (docs/json-skills.md), as meta.reasoning_language
// records them.
const (
	langZH    = "zh"
	langNonZH = "non_zh"
)

// reasoningLanguage is the reasoning-language rule of docs/json-skills.md exactly: CJK characters in
// U+3400–U+9FFF counted, English words by [A-Za-z]+('[A-Za-z]+)?; 2 or more CJK → zh; no
// CJK and 6 or more words → non_zh; at most 1 CJK and 12 or more words → non_zh; else zh.
// A missing or empty reasoning counts as zh.
func reasoningLanguage(reasoning any) string {
	text, ok := reasoning.(string)
	if !ok || text == "" {
		return langZH
	}
	cjk := 0
	for i := 0; i < len(text); {
		r, w := utf8.DecodeRuneInString(text[i:])
		if r >= 0x3400 && r <= 0x9fff {
			cjk++
		}
		i += w
	}
	if cjk >= 2 {
		return langZH
	}
	words := len(regexp.MustCompile(`[A-Za-z]+(?:'[A-Za-z]+)?`).FindAllStringIndex(text, -1))
	if (cjk == 0 && words >= 6) || (cjk <= 1 && words >= 12) {
		return langNonZH
	}
	return langZH
}
