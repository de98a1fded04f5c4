package thinkingml

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of the serp queries block (docs/thinkingml.md).
const (
	maxSerpQueries   = 5
	maxSerpQueryRune = 80
)

// The first and last line of the block, exactly as the contract spells them.
const (
	serpHead = "<!-- <serp_queries>\n"
	serpTail = "\n</serp_queries> -->"
)

// checkSerpBlock checks the block's three lines and its queries. When the lines are not
// exactly right it still reads the JSON between the markers, so that one slip (say, an
// indented line) does not hide what is wrong with the queries themselves.
func (v *validator) checkSerpBlock(sg seg) {
	raw := sg.text(v.src)
	block := raw
	if strings.IndexByte(raw, '\r') >= 0 {
		block = strings.ReplaceAll(raw, "\r\n", "\n") // a CRLF file is the same block
	}
	atLineStart := sg.start == 0 || v.src[sg.start-1] == '\n'
	mid, ok := serpMiddle(block)
	midOff := sg.start + strings.IndexByte(raw, '\n') + 1
	if !ok || !atLineStart {
		v.rep.err(sg.start, CodeSerpQueriesFormat, "the serp queries block must be exactly three unindented lines: "+
			"\"<!-- <serp_queries>\", the JSON array, \"</serp_queries> -->\"")
		if mid, ok = serpMiddleLoose(block); !ok {
			return
		}
		midOff = sg.start
	}
	queries, err := parseQueries(mid)
	if err != nil {
		v.rep.err(midOff, CodeSerpQueriesJSON, err.Error())
		return
	}
	v.sum.SerpQueries = queries
	v.checkQueries(midOff, queries)
}

// serpMiddle returns the middle line of a block written exactly as the contract says.
func serpMiddle(block string) (string, bool) {
	if len(block) < len(serpHead)+len(serpTail) || !strings.HasPrefix(block, serpHead) || !strings.HasSuffix(block, serpTail) {
		return "", false
	}
	mid := block[len(serpHead) : len(block)-len(serpTail)]
	if strings.IndexByte(mid, '\n') >= 0 || strings.TrimLeft(mid, " \t") != mid {
		return "", false
	}
	return mid, true
}

// serpMiddleLoose returns whatever stands between <serp_queries> and </serp_queries>.
func serpMiddleLoose(block string) (string, bool) {
	_, after, ok := strings.Cut(block, "<serp_queries>")
	if !ok {
		return "", false
	}
	mid, _, ok := strings.Cut(after, "</serp_queries>")
	return mid, ok
}

// parseQueries reads the middle line: a JSON array of strings and nothing else.
func parseQueries(mid string) ([]string, error) {
	trimmed := strings.TrimSpace(mid)
	if !strings.HasPrefix(trimmed, "[") {
		return nil, fmt.Errorf("the middle line of the serp queries block must be a JSON array of strings, not %s", clip(trimmed, 40))
	}
	var queries []string
	if err := json.Unmarshal([]byte(trimmed), &queries); err != nil {
		return nil, fmt.Errorf("the middle line of the serp queries block is not a JSON array of strings: %w", err)
	}
	return queries, nil
}

// checkQueries applies the query rules: count, duplicates, length, sensitive data.
func (v *validator) checkQueries(off int, queries []string) {
	if len(queries) == 0 {
		v.rep.warn(off, CodeSerpQueriesEmpty, "no serp queries: [] is meant for small talk; 1-3 queries is the norm")
	}
	if len(queries) > maxSerpQueries {
		v.rep.err(off, CodeSerpQueriesTooMany, fmt.Sprintf("%d serp queries; at most %d are allowed", len(queries), maxSerpQueries))
	}
	seen := make(map[string]int, len(queries))
	for i, q := range queries {
		key := strings.ToLower(strings.TrimSpace(q))
		if j, dup := seen[key]; dup {
			v.rep.err(off, CodeSerpQueriesDuplicate, fmt.Sprintf("serp query %d %s repeats query %d", i+1, clip(q, 40), j+1))
		} else {
			seen[key] = i
		}
		if n := utf8.RuneCountInString(q); n > maxSerpQueryRune {
			v.rep.err(off, CodeSerpQueriesTooLong, fmt.Sprintf("serp query %d has %d characters; at most %d are allowed", i+1, n, maxSerpQueryRune))
		}
		if kind := sensitiveKind(q); kind != "" {
			v.rep.err(off, CodeSerpQueriesSensitive, fmt.Sprintf("serp query %d contains %s", i+1, kind))
		}
	}
}

// clip quotes s for a message, shortened to n code points.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// sensitiveKind names the kind of personal data q holds, or returns "". Queries go to a
// search engine, so none may carry an e-mail address, a phone number, an IP address or a
// street address (docs/thinkingml.md's 住址).
func sensitiveKind(q string) string {
	switch {
	case hasEmail(q):
		return "an e-mail address"
	case hasIP(q, true):
		return "an IPv6 address"
	case hasIP(q, false):
		return "an IPv4 address"
	case hasPhone(q):
		return "a phone number"
	case hasStreetAddress(q):
		return "a street address"
	}
	return ""
}

// The forms of a street address docs/thinkingml.md names. In zh: a road, street, lane or
// alley name followed by a number and 号 (人民路100号), or a room, unit or building number
// (1201室, 3单元, 5栋; a room takes three digits or more, so a flat's layout, 2室1厅, is no
// address). In en: a house number, one to three capitalised words and a street word (10
// Downing Street, 1600 Pennsylvania Ave); the words between keep "top 10 street food" out.
var (
	zhStreetNumber = regexp.MustCompile(`[路街道巷弄]\s*[0-9０-９]+\s*号`)
	zhUnitNumber   = regexp.MustCompile(`(?:^|[^0-9０-９])(?:[0-9０-９]{3,5}室|[0-9０-９]{1,2}单元|[0-9０-９]{1,3}栋)`)
	enStreet       = regexp.MustCompile(`\b[0-9]{1,5}[A-Za-z]?\s+(?:[A-Z][A-Za-z'-]*\s+){1,3}(?:Street|St|Road|Rd|Avenue|Ave|Boulevard|Blvd|Lane|Ln|Drive|Dr)\b`)
)

// hasStreetAddress finds a street address in q (the forms above).
func hasStreetAddress(q string) bool {
	return zhStreetNumber.MatchString(q) || zhUnitNumber.MatchString(q) || enStreet.MatchString(q)
}

// hasEmail finds local@domain.tld with a letters-only top-level domain of two or more.
func hasEmail(q string) bool {
	for at := strings.IndexByte(q, '@'); at >= 0; {
		l := at
		for l > 0 && isEmailLocalByte(q[l-1]) {
			l--
		}
		r := at + 1
		for r < len(q) && (isLetter(q[r]) || isDigit(q[r]) || q[r] == '-' || q[r] == '.') {
			r++
		}
		if l < at && isDomain(strings.TrimRight(q[at+1:r], ".")) {
			return true
		}
		next := strings.IndexByte(q[at+1:], '@')
		if next < 0 {
			break
		}
		at += 1 + next
	}
	return false
}

func isEmailLocalByte(c byte) bool {
	return isLetter(c) || isDigit(c) || strings.IndexByte("._%+-", c) >= 0
}

func isDomain(d string) bool {
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" {
			return false
		}
	}
	tld := labels[len(labels)-1]
	for i := 0; i < len(tld); i++ {
		if !isLetter(tld[i]) {
			return false
		}
	}
	return len(tld) >= 2
}

// hasIP finds an IPv6 (v6) or IPv4 address standing as a word of its own, so that
// "std::vector" or "v1.2.3.4-beta" are not mistaken for one.
func hasIP(q string, v6 bool) bool {
	in := func(c byte) bool { return isDigit(c) || c == '.' }
	if v6 {
		in = func(c byte) bool { return hexValue(c) >= 0 || c == ':' || c == '.' }
	}
	for i := 0; i < len(q); {
		if !in(q[i]) {
			i++
			continue
		}
		j := i
		for j < len(q) && in(q[j]) {
			j++
		}
		word := strings.Trim(q[i:j], ".")
		bounded := (i == 0 || !isWordByte(q[i-1])) && (j == len(q) || !isWordByte(q[j]))
		if bounded && (!v6 || strings.Count(word, ":") >= 2) {
			if a, err := netip.ParseAddr(word); err == nil && a.Is6() == v6 {
				return true
			}
		}
		i = j
	}
	return false
}

// hasPhone finds a phone number: "+" and 8-15 digits, or 10-11 digits (12 with a leading
// 0) written as one run or as groups of three or more ("138 1234 5678", "(555) 123-4567").
// Years, dates and decimals do not match: "2020-2024", "2024-01-15", "3.14159265358".
func hasPhone(q string) bool {
	for i := 0; i < len(q); i++ {
		c := q[i]
		if !(c == '+' || c == '(' || isDigit(c)) || (i > 0 && isWordByte(q[i-1])) {
			continue
		}
		run := readDigitRun(q, i)
		if run.end < len(q) && isWordByte(q[run.end]) {
			i = run.end
			continue
		}
		if run.isPhone(c == '+') {
			return true
		}
		i = max(i, run.end-1)
	}
	return false
}

// digitRun is a stretch of digit groups joined by at most two of " -.()".
type digitRun struct {
	digits, groups, minGroup int
	first                    byte
	end                      int
}

func readDigitRun(q string, i int) digitRun {
	r := digitRun{minGroup: len(q) + 1}
	cur, seps := 0, 0
	j := i
	if q[j] == '+' {
		j++
	}
	for ; j < len(q); j++ {
		c := q[j]
		if isDigit(c) {
			if r.digits == 0 {
				r.first = c
			}
			r.digits, cur, seps = r.digits+1, cur+1, 0
			continue
		}
		if strings.IndexByte(" -.()", c) < 0 || seps == 2 {
			break
		}
		if cur > 0 {
			r.groups, r.minGroup, cur = r.groups+1, min(r.minGroup, cur), 0
		}
		seps++
	}
	if cur > 0 {
		r.groups, r.minGroup = r.groups+1, min(r.minGroup, cur)
	}
	r.end = j
	return r
}

func (r digitRun) isPhone(plus bool) bool {
	if plus {
		return r.digits >= 8 && r.digits <= 15
	}
	lengthOK := r.digits == 10 || r.digits == 11 || (r.digits == 12 && r.first == '0')
	return lengthOK && (r.groups == 1 || r.minGroup >= 3)
}

func isWordByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' }
