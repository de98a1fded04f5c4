package thinkingml

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// LanguageResult says whether a reply is written in the session's language, with the counts
// the decision rests on so that a log line or the message metadata can show why.
type LanguageResult struct {
	OK           bool   `json:"ok"`
	Reason       string `json:"reason"`
	CJK          int    `json:"cjk"`
	EnglishWords int    `json:"english_words"`
}

// Thresholds of the reply-language rule, taken from seed 000 (its _detect_reasoning_language).
const (
	// langEnoughScript characters of the expected script settle the question: the text is
	// in that language, foreign names and tickers notwithstanding.
	langEnoughScript = 2
	// With none of the expected script, this many foreign units mean the wrong language.
	langForeignAlone = 6
	// With at most one character of the expected script, this many foreign units do.
	langForeignMixed = 12
)

// CheckLanguage applies the reply-language rule to the prose of a reply: the text inside
// <thinking> and <final> (the whole reply when neither is found), with tags, comments and
// entities left out. locale is "zh" or "en"; any other locale is not checked.
//
// For zh it is seed 000's rule word for word: CJK characters (U+3400–U+9FFF) and English
// words ([A-Za-z]+ with an optional 'suffix) are counted; 2 or more CJK characters pass;
// otherwise 0 CJK with 6 or more English words, or at most 1 CJK with 12 or more English
// words, fail; anything else passes (too little text to judge). For en the seed has no rule,
// so the same thresholds apply with the two scripts swapped: 2 or more English words pass;
// 0 words with 6 or more CJK characters, or at most 1 word with 12 or more, fail.
func CheckLanguage(reply, locale string) LanguageResult {
	cjk, words := 0, 0
	for _, part := range prose(reply) {
		c, w := countScripts(part)
		cjk, words = cjk+c, words+w
	}
	res := LanguageResult{OK: true, CJK: cjk, EnglishWords: words}
	switch locale {
	case "zh":
		res.OK, res.Reason = judge(cjk, words, "CJK characters", "English words", "Chinese")
	case "en":
		res.OK, res.Reason = judge(words, cjk, "English words", "CJK characters", "English")
	default:
		res.Reason = fmt.Sprintf("no language check for locale %q", locale)
	}
	return res
}

// judge applies the seed's thresholds: own counts the expected script, foreign the other.
func judge(own, foreign int, ownName, foreignName, language string) (bool, string) {
	counts := fmt.Sprintf("%d %s and %d %s", own, ownName, foreign, foreignName)
	switch {
	case own >= langEnoughScript:
		return true, counts + ": written in " + language
	case own == 0 && foreign >= langForeignAlone, own <= 1 && foreign >= langForeignMixed:
		return false, counts + ": not written in " + language
	}
	return true, counts + ": too little text to judge, accepted"
}

// prose returns the parts of a reply the language rule looks at.
func prose(reply string) []string {
	var parts []string
	if in, ok := between(reply, "<thinking>", "</thinking>", false); ok {
		parts = append(parts, in)
	}
	if in, ok := between(reply, "<final>", "</final>", true); ok {
		parts = append(parts, in)
	}
	if parts == nil {
		parts = append(parts, reply)
	}
	return parts
}

// between returns the text from the first open to end (the last end when last is set).
func between(s, open, end string, last bool) (string, bool) {
	i := strings.Index(s, open)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(open):]
	j := strings.Index(rest, end)
	if last {
		j = strings.LastIndex(rest, end)
	}
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// countScripts counts CJK characters and English words the way seed 000's regular
// expressions do, skipping comments, tags and entities.
func countScripts(s string) (cjk, words int) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '<':
			i = skipMarkup(s, i)
		case c == '&':
			i += max(1, entityLen(s[i:]))
		case isLetter(c):
			i = skipWord(s, i)
			words++
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r >= 0x3400 && r <= 0x9FFF {
				cjk++
			}
			i += n
		}
	}
	return cjk, words
}

// skipWord passes one [A-Za-z]+(?:'[A-Za-z]+)? match starting at i.
func skipWord(s string, i int) int {
	for i < len(s) && isLetter(s[i]) {
		i++
	}
	if i+1 < len(s) && s[i] == '\'' && isLetter(s[i+1]) {
		i++
		for i < len(s) && isLetter(s[i]) {
			i++
		}
	}
	return i
}

// skipMarkup passes a comment or a tag at i, or just the '<' when it is text.
func skipMarkup(s string, i int) int {
	if strings.HasPrefix(s[i:], "<!--") {
		if n := strings.Index(s[i+4:], "-->"); n >= 0 {
			return i + 4 + n + 3
		}
		return i + 1
	}
	if _, ok := tagLike(s, i); ok {
		if n := strings.IndexByte(s[i:], '>'); n >= 0 {
			return i + n + 1
		}
	}
	return i + 1
}
