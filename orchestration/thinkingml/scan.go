package thinkingml

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// segKind says what a stretch of the reply is once markup and text are told apart.
type segKind uint8

const (
	segText    segKind = iota // a run of text between two pieces of markup
	segOpen                   // <name …>
	segClose                  // </name>
	segEmpty                  // <name …/>
	segComment                // <!-- … -->
)

// seg is one stretch of the reply in document order. Each seg becomes exactly one token of
// the document handed to etree (an element's start and end are two segs, an empty element
// one), which is how positions travel from the reply to the parsed tree.
type seg struct {
	kind       segKind
	name       string // tag name, for tags
	start, end int    // byte range in the reply
	san        int    // byte offset of the seg's form in the sanitized document
	id         string // the raw id attribute of a phase
	hasID      bool
	match      int // for a start tag, the index of its end tag once paired
}

// attr is one attribute as written, kept until the tag is known to be complete.
type attr struct {
	name, value      string
	off              int
	hasValue, quoted bool
}

// scanner splits a reply into markup and text (docs/thinkingml.md) and writes a sanitized
// copy for etree: allowed tags normalised, comments emptied (a model may write "--" in one,
// which XML forbids), and every '<', '&' and '>' that is text escaped. Problems that only
// the split can see are reported as it goes.
type scanner struct {
	src     string
	rep     *reporter
	out     []byte
	segs    []seg
	attrs   []attr
	text    int // start of the open text run in src, or -1
	textSan int
	utf8OK  bool // src is valid UTF-8 without U+FFFE/U+FFFF, so no rune needs checking
}

// rootOpen and rootClose wrap the reply so that etree sees one root element; "r" is not an
// allowed tag, so no reply can close it early.
const (
	rootOpen  = "<r>"
	rootClose = "</r>"
)

// scan splits src and returns the scanner holding the segs and the sanitized document.
func scan(src string, rep *reporter) *scanner {
	s := &scanner{src: src, rep: rep, text: -1}
	s.utf8OK = utf8.ValidString(src) && !strings.ContainsRune(src, 0xFFFE) && !strings.ContainsRune(src, 0xFFFF)
	s.out = make([]byte, 0, len(src)+len(src)/8+len(rootOpen)+len(rootClose))
	s.segs = make([]seg, 0, 2*strings.Count(src, "<")+1) // a tag and the text after it, at most
	s.out = append(s.out, rootOpen...)
	for i := 0; i < len(src); {
		i = s.step(i)
	}
	s.closeText(len(src))
	s.out = append(s.out, rootClose...)
	return s
}

// step consumes what starts at i and returns where to go on.
func (s *scanner) step(i int) int {
	c := s.src[i]
	switch {
	case c == '<':
		return s.lt(i)
	case c == '&':
		if n := entityLen(s.src[i:]); n > 0 {
			s.textBytes(i, i+n)
			return i + n
		}
		return s.escape(i, 1, "&amp;")
	case c == '>':
		return s.escape(i, 1, "&gt;") // "]]>" in text is an XML error, so no '>' goes through bare
	case isControl(c):
		n := 1
		for i+n < len(s.src) && isControl(s.src[i+n]) {
			n++
		}
		s.rep.err(i, CodeMalformedXML, fmt.Sprintf("control character U+%04X is not allowed in XML%s", c, andMore(n)))
		return s.escape(i, n, "\uFFFD")
	case c >= utf8.RuneSelf && !s.utf8OK:
		return s.checkRune(i)
	}
	j := i + 1
	for j < len(s.src) && s.plain(s.src[j]) {
		j++
	}
	s.textBytes(i, j)
	return j
}

// plain reports whether c is text that needs no attention.
func (s *scanner) plain(c byte) bool {
	return c != '<' && c != '&' && c != '>' && !isControl(c) && (c < utf8.RuneSelf || s.utf8OK)
}

// checkRune handles a non-ASCII rune when the reply holds something XML cannot carry. A
// run of bad bytes is one error: the reply is broken once, not once per byte.
func (s *scanner) checkRune(i int) int {
	r, n := utf8.DecodeRuneInString(s.src[i:])
	switch {
	case r == utf8.RuneError && n == 1:
		for i+n < len(s.src) && isBadByte(s.src[i+n:]) {
			n++
		}
		s.rep.err(i, CodeMalformedXML, fmt.Sprintf("byte 0x%02X is not valid UTF-8%s", s.src[i], andMore(n)))
		return s.escape(i, n, "\uFFFD")
	case r == 0xFFFE || r == 0xFFFF:
		s.rep.err(i, CodeMalformedXML, fmt.Sprintf("character U+%04X is not allowed in XML", r))
		return s.escape(i, n, "\uFFFD")
	}
	s.textBytes(i, i+n)
	return i + n
}

// isBadByte reports whether s starts with a byte that is not valid UTF-8.
func isBadByte(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && n == 1
}

// andMore completes a message about a run of n bad characters.
func andMore(n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf(" (a run of %d)", n)
}

// lt handles a '<': a comment, a declaration, a tag, or plain text.
func (s *scanner) lt(i int) int {
	rest := s.src[i:]
	switch {
	case strings.HasPrefix(rest, "<!--"):
		return s.comment(i)
	case strings.HasPrefix(rest, "<![CDATA["):
		s.rep.err(i, CodeTagNotAllowed, "CDATA sections are not allowed; escape < and & as &lt; and &amp; instead")
		return s.escape(i, 1, "&lt;")
	case len(rest) > 2 && rest[1] == '!' && isLetter(rest[2]):
		s.rep.err(i, CodeTagNotAllowed, "declarations such as <!DOCTYPE> are not allowed")
		return s.escape(i, 1, "&lt;")
	case len(rest) > 2 && rest[1] == '?' && isLetter(rest[2]):
		s.rep.err(i, CodeTagNotAllowed, "processing instructions and the XML declaration are not allowed")
		return s.escape(i, 1, "&lt;")
	}
	t, ok := tagLike(s.src, i)
	switch {
	case !ok:
		return s.escape(i, 1, "&lt;")
	case !isAllowedTag(t.name):
		s.rep.err(i, CodeTagNotAllowed, notAllowedMessage(t))
		return s.escape(i, 1, "&lt;")
	case t.closing:
		return s.closeTag(i, t)
	}
	return s.openTag(i, t)
}

// comment takes a whole <!-- … --> out of the text; the walk reads it back by position.
func (s *scanner) comment(i int) int {
	n := strings.Index(s.src[i+4:], "-->")
	if n < 0 {
		s.rep.err(i, CodeMalformedXML, "comment is never closed with -->")
		return s.escape(i, 1, "&lt;")
	}
	end := i + 4 + n + 3
	s.markup(seg{kind: segComment, start: i, end: end})
	s.out = append(s.out, "<!---->"...)
	return end
}

// closeTag handles </name …>. White space may precede '>'; anything else is reported but
// the tag still counts, so one stray character does not cascade into nesting errors.
func (s *scanner) closeTag(i int, t tagToken) int {
	k := skipSpace(s.src, t.after)
	if k >= len(s.src) || s.src[k] != '>' {
		gt := strings.IndexByte(s.src[k:], '>')
		lt := strings.IndexByte(s.src[k:], '<')
		if gt < 0 || (lt >= 0 && lt < gt) {
			s.rep.err(i, CodeMalformedXML, fmt.Sprintf("closing tag </%s> is not closed with >", t.name))
			return s.escape(i, 1, "&lt;")
		}
		s.rep.err(i, CodeMalformedXML, fmt.Sprintf("closing tag </%s> may hold nothing but white space before >", t.name))
		k += gt
	}
	s.markup(seg{kind: segClose, name: t.name, start: i, end: k + 1})
	s.out = append(s.out, "</"...)
	s.out = append(s.out, t.name...)
	s.out = append(s.out, '>')
	return k + 1
}

// openTag handles <name …> and <name …/>: it checks the attributes and writes the tag
// without them (the walk reads a phase's id from the seg).
func (s *scanner) openTag(i int, t tagToken) int {
	end, empty, ok := s.readAttrs(t.after)
	if !ok {
		s.rep.err(i, CodeMalformedXML, fmt.Sprintf("tag <%s> is not closed with >", t.name))
		return s.escape(i, 1, "&lt;")
	}
	sg := seg{kind: segOpen, name: t.name, start: i, end: end}
	if empty {
		sg.kind = segEmpty
	}
	for _, a := range s.attrs {
		s.checkAttr(&sg, a)
	}
	s.markup(sg)
	s.out = append(s.out, '<')
	s.out = append(s.out, t.name...)
	if empty {
		s.out = append(s.out, '/')
	}
	s.out = append(s.out, '>')
	return end
}

// readAttrs reads attributes from k to the end of the tag into s.attrs. It accepts more
// than XML does (unquoted or missing values) so that checkAttr can say what is wrong; it
// fails only when the tag has no end.
func (s *scanner) readAttrs(k int) (end int, empty, ok bool) {
	src := s.src
	s.attrs = s.attrs[:0]
	for {
		k = skipSpace(src, k)
		if k >= len(src) || src[k] == '<' {
			return 0, false, false
		}
		switch {
		case src[k] == '>':
			return k + 1, false, true
		case strings.HasPrefix(src[k:], "/>"):
			return k + 2, true, true
		}
		a := attr{off: k}
		n := k
		for n < len(src) && isAttrNameByte(src[n]) {
			n++
		}
		if n == k {
			n++ // a stray byte such as '=' or '"': take it as a name so the loop moves on
		}
		a.name, k = src[a.off:n], skipSpace(src, n)
		if k < len(src) && src[k] == '=' {
			a.hasValue = true
			var vok bool
			if a.value, a.quoted, k, vok = readValue(src, skipSpace(src, k+1)); !vok {
				return 0, false, false
			}
		}
		s.attrs = append(s.attrs, a)
	}
}

// readValue reads an attribute value at k, quoted or not, and returns where it ends.
func readValue(src string, k int) (value string, quoted bool, next int, ok bool) {
	if k < len(src) && (src[k] == '"' || src[k] == '\'') {
		q := strings.IndexByte(src[k+1:], src[k])
		if q < 0 {
			return "", false, 0, false
		}
		return src[k+1 : k+1+q], true, k + 2 + q, true
	}
	v := k
	for k < len(src) && !isSpace(src[k]) && src[k] != '>' && src[k] != '<' && !strings.HasPrefix(src[k:], "/>") {
		k++
	}
	return src[v:k], false, k, true
}

// checkAttr reports what is wrong with one attribute and keeps a phase's id.
func (s *scanner) checkAttr(sg *seg, a attr) {
	switch {
	case !isAttrName(a.name):
		s.rep.err(a.off, CodeMalformedXML, fmt.Sprintf("unexpected %q in tag <%s>", a.name, sg.name))
		return
	case !a.hasValue:
		s.rep.err(a.off, CodeMalformedXML, fmt.Sprintf("attribute %s has no value", a.name))
	case !a.quoted:
		s.rep.err(a.off, CodeMalformedXML, fmt.Sprintf("the value of attribute %s must be quoted", a.name))
	case strings.IndexByte(a.value, '<') >= 0:
		s.rep.err(a.off, CodeMalformedXML, fmt.Sprintf("the value of attribute %s holds '<'", a.name))
	}
	switch {
	case sg.name == "phase" && a.name == "id" && !sg.hasID:
		sg.id, sg.hasID = a.value, true
	case sg.name == "phase" && a.name == "id":
		s.rep.err(a.off, CodeAttributeNotAllowed, "<phase> has more than one id attribute")
	case sg.name == "phase":
		s.rep.err(a.off, CodeAttributeNotAllowed, fmt.Sprintf("attribute %q is not allowed: <phase> takes only id", a.name))
	default:
		s.rep.err(a.off, CodeAttributeNotAllowed, fmt.Sprintf("attribute %q is not allowed: <%s> takes no attributes", a.name, sg.name))
	}
}

// markup closes the open text run and records sg.
func (s *scanner) markup(sg seg) {
	s.closeText(sg.start)
	sg.san = len(s.out)
	sg.match = len(s.segs)
	s.segs = append(s.segs, sg)
}

// textBytes copies src[i:j] as text.
func (s *scanner) textBytes(i, j int) {
	s.openText(i)
	s.out = append(s.out, s.src[i:j]...)
}

// escape writes repl for the n bytes at i, which stay text.
func (s *scanner) escape(i, n int, repl string) int {
	s.openText(i)
	s.out = append(s.out, repl...)
	return i + n
}

func (s *scanner) openText(i int) {
	if s.text < 0 {
		s.text, s.textSan = i, len(s.out)
	}
}

func (s *scanner) closeText(end int) {
	if s.text >= 0 {
		s.segs = append(s.segs, seg{kind: segText, start: s.text, end: end, san: s.textSan, match: len(s.segs)})
		s.text = -1
	}
}

// tagToken is the head of something that looks like a tag.
type tagToken struct {
	name    string
	closing bool
	after   int // offset just past the name
}

// tagLike reports whether src[i:] looks like a tag (docs/thinkingml.md): '<' or '</', an ASCII
// letter, name characters, then white space, '>' or "/>". Everything else is text, which
// keeps "a < b", "x<5", "<https://…>" and "<-" out of the way of Markdown.
func tagLike(src string, i int) (tagToken, bool) {
	j := i + 1
	t := tagToken{}
	if j < len(src) && src[j] == '/' {
		t.closing = true
		j++
	}
	if j >= len(src) || !isLetter(src[j]) {
		return t, false
	}
	k := j + 1
	for k < len(src) && isNameByte(src[k]) {
		k++
	}
	if k >= len(src) || !(isSpace(src[k]) || src[k] == '>' || strings.HasPrefix(src[k:], "/>")) {
		return t, false
	}
	t.name, t.after = src[j:k], k
	return t, true
}

// isAllowedTag reports whether name is one of the six tags of the contract, spelled exactly.
func isAllowedTag(name string) bool {
	switch name {
	case "think", "serp", "thinking", "phase", "title", "final":
		return true
	}
	return false
}

// notAllowedMessage explains a tag_not_allowed, pointing out a case slip when there is one.
func notAllowedMessage(t tagToken) string {
	slash := ""
	if t.closing {
		slash = "/"
	}
	lower := strings.ToLower(t.name)
	if isAllowedTag(lower) {
		return fmt.Sprintf("tag <%s%s> is not allowed: tag names are case-sensitive, write <%s%s>", slash, t.name, slash, lower)
	}
	return fmt.Sprintf("tag <%s%s> is not allowed; to show it as text write &lt;%s%s&gt;", slash, t.name, slash, t.name)
}

// entityLen returns the length of the XML entity or character reference at the start of s,
// or 0 when the '&' there is plain text (docs/thinkingml.md: "R&D", "&nbsp;").
func entityLen(s string) int {
	semi := strings.IndexByte(s[:min(len(s), 12)], ';')
	if semi < 2 {
		return 0
	}
	name := s[1:semi]
	switch name {
	case "lt", "gt", "amp", "quot", "apos":
		return semi + 1
	}
	if name[0] != '#' {
		return 0
	}
	r, ok := charRef(name[1:])
	if !ok || !isXMLChar(r) {
		return 0
	}
	return semi + 1
}

// charRef parses the digits of a numeric character reference ("65" or "x41").
func charRef(digits string) (rune, bool) {
	base := rune(10)
	if digits != "" && digits[0] == 'x' {
		base, digits = 16, digits[1:]
	}
	if digits == "" || len(digits) > 7 {
		return 0, false
	}
	var r rune
	for i := 0; i < len(digits); i++ {
		d := hexValue(digits[i])
		if d < 0 || d >= base {
			return 0, false
		}
		r = r*base + d
	}
	return r, true
}

func hexValue(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

// isXMLChar reports whether XML 1.0 may carry r.
func isXMLChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

func isControl(c byte) bool { return c < 0x20 && c != '\t' && c != '\n' && c != '\r' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isLetter(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isNameByte reports a tag-name character of docs/thinkingml.md (no ':').
func isNameByte(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '-' || c == '.' }

func isAttrNameByte(c byte) bool {
	return !isSpace(c) && c != '=' && c != '>' && c != '/' && c != '<' && c != '"' && c != '\''
}

// isAttrName reports whether name is an XML attribute name (ASCII start, anything after).
func isAttrName(name string) bool {
	if name == "" || !(isLetter(name[0]) || name[0] == '_' || name[0] == ':') {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !(isNameByte(c) || c == ':' || c >= utf8.RuneSelf) {
			return false
		}
	}
	return true
}

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}
