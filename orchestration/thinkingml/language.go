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

// Thresholds of the reply-language rule. The first three are docs/phases.md's
// (_detect_reasoning_language); the last two add the rule for a reply mostly in the other
// language, which the seed's 2-unit floor alone lets through.
const (
	// langEnoughScript units of the expected script pass a reply that is not mostly in
	// the other language: foreign names and tickers notwithstanding.
	langEnoughScript = 2
	// With none of the expected script, this many foreign units mean the wrong language.
	langForeignAlone = 6
	// With at most one unit of the expected script, this many foreign units do.
	langForeignMixed = 12
	// cjkPerWord is how many CJK characters weigh as much as one English word (a Chinese
	// word is mostly two characters), to compare the two scripts.
	cjkPerWord = 2
	// langDominance: a reply whose foreign prose weighs more than this many times its own
	// (and at least langForeignAlone units) is in the wrong language.
	langDominance = 2
)

// CheckLanguage applies the reply-language rule to the prose of a reply: the text inside
// <thinking> and <final> (the whole reply when neither is found). Only prose counts, not
// what reads the same in every language: tags, comments and entities, code (inline `…`
// spans and fenced blocks), URLs and e-mail addresses, identifiers (anything with an
// underscore, a digit inside a word, an inner capital, a dot or slash between letters:
// run_backtest, SMA20, runBacktest, strategy.v1), acronyms and tickers in capitals (BTC,
// RSI, BTC-USD) and numbers. locale is "zh" or "en"; any other locale is not checked.
//
// CJK characters (U+3400–U+9FFF) and English words ([A-Za-z]+ with an optional 'suffix)
// are counted. For zh it is docs/phases.md's rule: 2 or more CJK characters pass, unless the
// reply is mostly English; 0 CJK with 6 or more English words, or at most 1 CJK with 12 or
// more, fail; anything else passes (too little text to judge). For en the same thresholds
// apply with the two scripts swapped. "Mostly" the other language means at least 6 units
// of it weighing more than twice the expected language, a CJK character weighing half an
// English word: in a zh session more English words than CJK characters, in an en session
// more than four CJK characters per English word.
func CheckLanguage(reply, locale string) LanguageResult {
	cjk, words := 0, 0
	for _, part := range prose(reply) {
		c, w := countScripts(stripCode(part))
		cjk, words = cjk+c, words+w
	}
	res := LanguageResult{OK: true, CJK: cjk, EnglishWords: words}
	switch locale {
	case "zh":
		res.OK, res.Reason = judge(tally{cjk, "CJK characters", cjkPerWord}, tally{words, "English words", 1}, "Chinese")
	case "en":
		res.OK, res.Reason = judge(tally{words, "English words", 1}, tally{cjk, "CJK characters", cjkPerWord}, "English")
	default:
		res.Reason = fmt.Sprintf("no language check for locale %q", locale)
	}
	return res
}

// tally is one script's count: n units, per of which weigh one English word.
type tally struct {
	n    int
	name string
	per  int
}

// judge applies the thresholds: own counts the expected script, foreign the other.
func judge(own, foreign tally, language string) (bool, string) {
	counts := fmt.Sprintf("%d %s and %d %s", own.n, own.name, foreign.n, foreign.name)
	// Compare weights without fractions: own.n/own.per against foreign.n/foreign.per.
	mostlyForeign := foreign.n >= langForeignAlone && foreign.n*own.per > langDominance*own.n*foreign.per
	switch {
	case own.n == 0 && foreign.n >= langForeignAlone, own.n <= 1 && foreign.n >= langForeignMixed:
		return false, counts + ": not written in " + language
	case mostlyForeign:
		return false, counts + ": mostly not written in " + language
	case own.n >= langEnoughScript:
		return true, counts + ": written in " + language
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

// stripCode removes Markdown code: fenced blocks (``` lines) and inline `…` spans (on one
// line). An unclosed fence or backtick is left as text.
func stripCode(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "```")
		if i < 0 {
			break
		}
		j := strings.Index(s[i+3:], "```")
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteByte(' ')
		s = s[i+3+j+3:]
	}
	b.WriteString(s)
	s, b = b.String(), strings.Builder{}
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			break
		}
		j := strings.IndexAny(s[i+1:], "`\n")
		if j < 0 || s[i+1+j] != '`' {
			b.WriteString(s[:i+1])
			s = s[i+1:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteByte(' ')
		s = s[i+1+j+1:]
	}
	b.WriteString(s)
	return b.String()
}

// countScripts counts CJK characters and English prose words, skipping comments, tags,
// entities and every chunk that is no prose (see [CheckLanguage]).
func countScripts(s string) (cjk, words int) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '<':
			i = skipMarkup(s, i)
		case c == '&':
			i += max(1, entityLen(s[i:]))
		case isChunkByte(c):
			j := i
			for j < len(s) && isChunkByte(s[j]) {
				j++
			}
			words += proseWords(s[i:j])
			i = j
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

// isChunkByte reports the ASCII bytes a word, an identifier, a number or a URL is made of.
// Other punctuation, white space and every non-ASCII character (CJK text has no spaces)
// end a chunk.
func isChunkByte(c byte) bool {
	return isLetter(c) || ('0' <= c && c <= '9') || strings.IndexByte("_.'/:@%+=~-", c) >= 0
}

// proseWords counts the English words of one chunk, 0 when the chunk is a URL, an e-mail
// address or an identifier; acronyms in capitals and numbers are not words either.
func proseWords(chunk string) int {
	if !hasLetter(chunk) || isIdentifier(chunk) {
		return 0
	}
	n := 0
	for i := 0; i < len(chunk); {
		if !isLetter(chunk[i]) {
			i++
			continue
		}
		j := skipWord(chunk, i)
		if !isAcronym(chunk[i:j]) {
			n++
		}
		i = j
	}
	return n
}

// isIdentifier reports a chunk that reads the same in every language: a URL, an e-mail
// address, or an identifier (an underscore, a digit next to a letter, an inner capital
// after a small letter, a dot, slash or colon between two letters or digits).
func isIdentifier(chunk string) bool {
	if strings.Contains(chunk, "://") || strings.HasPrefix(chunk, "www.") || strings.Contains(chunk, "@") ||
		strings.Contains(chunk, "_") {
		return true
	}
	for i := 1; i < len(chunk); i++ {
		a, b := chunk[i-1], chunk[i]
		switch {
		case isAlnum(a) && isAlnum(b) && isDigit(a) != isDigit(b):
			return true // SMA20, 5x5, v1
		case 'a' <= a && a <= 'z' && 'A' <= b && b <= 'Z':
			return true // runBacktest
		case strings.IndexByte("./:", b) >= 0 && i+1 < len(chunk) && isAlnum(a) && isAlnum(chunk[i+1]):
			return true // strategy.v1, risk_lab/run, e.g
		}
	}
	return false
}

// isAcronym reports a word of two or more capitals (BTC, RSI, USD), a name or ticker
// rather than prose.
func isAcronym(w string) bool {
	if len(w) < 2 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !('A' <= w[i] && w[i] <= 'Z') && w[i] != '\'' {
			return false
		}
	}
	return true
}

func hasLetter(s string) bool {
	for i := 0; i < len(s); i++ {
		if isLetter(s[i]) {
			return true
		}
	}
	return false
}

func isAlnum(c byte) bool { return isLetter(c) || isDigit(c) }

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
