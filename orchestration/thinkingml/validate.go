// Package thinkingml checks model replies against the ThinkingML reply contract
// (docs/thinkingml.md) and filters the reply stream before the client sees it.
//
// [Validate] is the one place that says whether a reply is acceptable; the orchestrator, the
// HTTP endpoint and the "phaseflow validate" command all call it, so they cannot disagree.
// It separates markup from Markdown text the way the contract defines (only what looks like
// a tag is markup), parses the markup strictly with etree, and reports every independent
// problem it can with a stable code and a line and column in code points.
//
// [Filter] rewrites the stream chunk by chunk: it escapes <final> written inside
// <thinking> and withholds the AGENT_* blocks, holding back only text that may still turn
// into one of those tags. [CheckLanguage] applies the reply-language rule.
package thinkingml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/beevik/etree"
)

// maxIssues caps the errors (and, separately, the warnings) of one result, so that a reply
// made of thousands of stray tags yields a readable answer; the reply is invalid either way.
const maxIssues = 100

// maxNesting is the depth past which elements are reported as nested too deeply. A valid
// reply nests four deep; etree refuses documents deeper than its own limit (1024).
const maxNesting = 256

// Validate checks reply against the ThinkingML contract. It never panics, and a reply
// holding anything that looks like a tag and is not one of the six allowed ones is never
// valid. Errors and warnings come in the order of their position in the reply, at most 100
// of each.
func Validate(reply string, opts Options) Result {
	v := &validator{src: reply, opts: opts}
	v.run()
	return v.result()
}

// validator holds the state of one Validate call.
type validator struct {
	src   string
	opts  Options
	rep   reporter
	segs  []seg
	at    map[etree.Token]int // the seg of each token of the parsed tree
	sum   Summary
	lines []int // byte offsets of line starts, built on first use
	// last is the position lineCol found last: a later offset on the same line counts its
	// column from there, so issues asked for in order cost one pass over a long line.
	last struct{ off, line, col int }
}

func (v *validator) run() {
	trimmed := strings.TrimSpace(v.src)
	switch trimmed {
	case "":
		v.rep.err(0, CodeEmptyReply, "the reply is empty")
		return
	case "<<ParsingError>>":
		v.rep.err(strings.Index(v.src, trimmed), CodeModelParsingError,
			"the model declared that it could not produce the structure (<<ParsingError>>)")
		return
	}
	s := scan(v.src, &v.rep)
	v.segs = s.segs
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(s.out); err != nil {
		v.diagnose(err, s.out)
		return
	}
	root := doc.Root()
	v.at = make(map[etree.Token]int, len(v.segs))
	next := 0
	if root == nil || !v.pair(root, &next) || next != len(v.segs) {
		// The scanner and etree disagree on the token stream: a bug here, not in the reply.
		v.rep.err(0, CodeMalformedXML, "internal error: the parsed reply could not be mapped back to its text")
		return
	}
	v.checkTop(root)
}

// pair walks the parsed tree in document order and matches each token with its seg, which
// gives every token a position in the reply. It reports false if the two ever differ.
func (v *validator) pair(e *etree.Element, next *int) bool {
	for _, tok := range e.Child {
		i := *next
		if i >= len(v.segs) {
			return false
		}
		*next++
		sg := &v.segs[i]
		switch t := tok.(type) {
		case *etree.CharData:
			if sg.kind != segText {
				return false
			}
		case *etree.Comment:
			if sg.kind != segComment {
				return false
			}
		case *etree.Element:
			if t.Tag != sg.name || (sg.kind != segOpen && sg.kind != segEmpty) {
				return false
			}
			if sg.kind == segOpen {
				if !v.pair(t, next) || *next >= len(v.segs) || v.segs[*next].kind != segClose {
					return false
				}
				sg.match = *next
				*next++
			}
		default:
			return false
		}
		v.at[tok] = i
	}
	return true
}

// diagnose explains why etree refused the document. The nesting of the tags is checked
// first because it can name the tags involved; the decoder's own offset is the fallback.
func (v *validator) diagnose(err error, doc []byte) {
	if v.nesting() {
		return
	}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		if _, derr := dec.RawToken(); derr != nil {
			break
		}
	}
	off := v.origOffset(int(dec.InputOffset()))
	msg := fmt.Sprintf("the reply is not well-formed XML: %v", err)
	if errors.Is(err, etree.ErrMaxDepth) {
		msg = "elements are nested too deeply"
	}
	v.rep.err(off, CodeMalformedXML, msg)
}

// nesting reports unclosed, mismatched and stray closing tags and too deep nesting, and
// says whether it found any. It is linear in the tags: open counts by name tell a stray
// closing tag at once, each open tag is popped once, and no message is written once the
// report is full.
func (v *validator) nesting() bool {
	found := false
	bad := func(off int, msg func() string) {
		found = true
		if !v.rep.full() {
			v.rep.err(off, CodeMalformedXML, msg())
		}
	}
	var stack []int
	open := map[string]int{}
	for i, sg := range v.segs {
		switch sg.kind {
		case segOpen:
			stack = append(stack, i)
			open[sg.name]++
			if len(stack) == maxNesting+1 {
				bad(sg.start, func() string { return fmt.Sprintf("elements are nested more than %d deep", maxNesting) })
			}
		case segClose:
			if open[sg.name] == 0 {
				bad(sg.start, func() string { return fmt.Sprintf("closing tag </%s> has no matching <%s>", sg.name, sg.name) })
				continue
			}
			for {
				top := v.segs[stack[len(stack)-1]]
				stack = stack[:len(stack)-1]
				open[top.name]--
				if top.name == sg.name {
					break
				}
				bad(top.start, func() string {
					line, col := v.lineCol(sg.start)
					return fmt.Sprintf("<%s> is not closed before </%s> at %d:%d", top.name, sg.name, line, col)
				})
			}
		}
	}
	for _, i := range stack {
		bad(v.segs[i].start, func() string { return fmt.Sprintf("<%s> is never closed", v.segs[i].name) })
	}
	return found
}

// origOffset maps an offset in the sanitized document to the start of the seg holding it.
func (v *validator) origOffset(san int) int {
	k := sort.Search(len(v.segs), func(i int) bool { return v.segs[i].san > san }) - 1
	if k < 0 {
		return 0
	}
	return v.segs[k].start
}

// pos returns the offset to report for a token: its tag, or the first non-space of a text.
func (v *validator) pos(tok etree.Token) int {
	sg := v.segs[v.at[tok]]
	if sg.kind == segText {
		return sg.start + len(sg.text(v.src)) - len(strings.TrimLeft(sg.text(v.src), " \t\r\n"))
	}
	return sg.start
}

func (sg seg) text(src string) string { return src[sg.start:sg.end] }

// endTag returns the seg of e's end tag (its own seg for <e/>).
func (v *validator) endTag(e *etree.Element) seg { return v.segs[v.segs[v.at[e]].match] }

// lineCol turns a byte offset into a 1-based line and a column in code points.
func (v *validator) lineCol(off int) (line, col int) {
	if v.lines == nil {
		v.lines = append(make([]int, 0, 64), 0)
		for i := 0; i < len(v.src); i++ {
			if v.src[i] == '\n' {
				v.lines = append(v.lines, i+1)
			}
		}
	}
	l := sort.Search(len(v.lines), func(i int) bool { return v.lines[i] > off }) - 1
	from, col := v.lines[l], 1
	if v.last.line == l+1 && v.last.off <= off {
		from, col = v.last.off, v.last.col
	}
	col += utf8.RuneCountInString(v.src[from:off])
	v.last.off, v.last.line, v.last.col = off, l+1, col
	return l + 1, col
}

// result assembles the public Result, issues sorted by position.
func (v *validator) result() Result {
	r := Result{Summary: v.sum}
	r.Errors = v.issues(v.rep.errs)
	r.Warnings = v.issues(v.rep.warns)
	r.Valid = len(r.Errors) == 0
	if r.Summary.SerpQueries == nil {
		r.Summary.SerpQueries = []string{}
	}
	return r
}

func (v *validator) issues(in []issue) []Issue {
	sort.SliceStable(in, func(i, j int) bool { return in[i].off < in[j].off })
	out := make([]Issue, len(in))
	for i, is := range in {
		line, col := v.lineCol(is.off)
		out[i] = Issue{Code: is.code, Message: is.msg, Line: line, Column: col}
	}
	return out
}

// issue is a problem at a byte offset, turned into line and column at the end.
type issue struct {
	off  int
	code Code
	msg  string
}

// reporter collects issues up to maxIssues of each kind.
type reporter struct {
	errs, warns []issue
}

// full reports whether no more errors are kept: a caller may skip writing one.
func (r *reporter) full() bool { return len(r.errs) >= maxIssues }

func (r *reporter) err(off int, code Code, msg string) {
	if len(r.errs) < maxIssues {
		r.errs = append(r.errs, issue{off, code, msg})
	}
}

func (r *reporter) warn(off int, code Code, msg string) {
	if len(r.warns) < maxIssues {
		r.warns = append(r.warns, issue{off, code, msg})
	}
}
