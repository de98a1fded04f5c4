package thinkingml

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/beevik/etree"
)

// The top-level elements in the order the contract requires.
const (
	rankThink = iota
	rankSerp
	rankThinking
	rankFinal
	numRanks
)

// topRank returns the place of a top-level element, or -1 for phase and title.
func topRank(name string) int {
	switch name {
	case "think":
		return rankThink
	case "serp":
		return rankSerp
	case "thinking":
		return rankThinking
	case "final":
		return rankFinal
	}
	return -1
}

func rankName(r int) string {
	return [numRanks]string{"think", "serp", "thinking", "final"}[r]
}

// checkTop checks the top level: only the four elements, each at most once, in order,
// <final> right after <thinking>, nothing but white space around them.
func (v *validator) checkTop(root *etree.Element) {
	thinkingAt, finalAt := childIndex(root, "thinking"), childIndex(root, "final")
	var first [numRanks]*etree.Element
	maxRank := -1
	gapReported := false
	for ci, tok := range root.Child {
		between := thinkingAt >= 0 && thinkingAt < ci && ci < finalAt
		if between && !gapReported && !isSpaceToken(tok) {
			v.errAt(tok, CodeFinalNotAfterThinking, "only white space may stand between </thinking> and <final>")
			gapReported = true
		}
		switch t := tok.(type) {
		case *etree.CharData:
			if !between && !t.IsWhitespace() {
				v.errAt(tok, CodeTextOutsideElements, "text outside <think>, <serp>, <thinking> and <final>")
			}
		case *etree.Comment:
			if !between {
				v.warnAt(tok, CodeCommentOutsideSerpBlock, "comment outside <final>'s serp queries block")
			}
		case *etree.Element:
			v.topElement(t, &first, &maxRank)
		}
	}
	v.sum.HasThink, v.sum.HasSerp = first[rankThink] != nil, first[rankSerp] != nil
	if first[rankThinking] == nil {
		v.rep.err(0, CodeMissingThinking, "the reply has no <thinking>")
	}
	if first[rankFinal] == nil {
		off := len(v.src)
		if th := first[rankThinking]; th != nil {
			off = v.endTag(th).end
		}
		v.rep.err(off, CodeMissingFinal, "the reply has no <final>")
	}
}

// topElement checks one top-level element and, the first time it appears, its content.
func (v *validator) topElement(e *etree.Element, first *[numRanks]*etree.Element, maxRank *int) {
	r := topRank(e.Tag)
	switch {
	case r < 0:
		v.errAt(e, CodeNestedTagNotAllowed, fmt.Sprintf("<%s> is only allowed inside <%s>", e.Tag, parentOf(e.Tag)))
		return
	case first[r] != nil:
		v.errAt(e, CodeDuplicateElement, fmt.Sprintf("a second <%s>: the reply may hold only one", e.Tag))
		return
	}
	first[r] = e
	if r < *maxRank {
		v.errAt(e, CodeOrderViolation, fmt.Sprintf("<%s> must come before <%s>", e.Tag, rankName(*maxRank)))
	} else {
		*maxRank = r
	}
	switch r {
	case rankThink, rankSerp:
		v.checkPlain(e)
	case rankThinking:
		v.checkThinking(e)
	case rankFinal:
		v.checkFinal(e)
	}
}

func parentOf(tag string) string {
	if tag == "title" {
		return "phase"
	}
	return "thinking"
}

// checkPlain checks an element that holds plain text only: <think>, <serp>, <title>.
func (v *validator) checkPlain(e *etree.Element) {
	for _, tok := range e.Child {
		switch t := tok.(type) {
		case *etree.Element:
			v.errAt(t, CodeNestedTagNotAllowed, fmt.Sprintf("<%s> inside <%s>, which holds plain text only", t.Tag, e.Tag))
		case *etree.Comment:
			v.warnAt(t, CodeCommentOutsideSerpBlock, fmt.Sprintf("comment inside <%s>", e.Tag))
		}
	}
}

// checkThinking checks <thinking>: phases only, ids increasing, each phase well formed.
func (v *validator) checkThinking(e *etree.Element) {
	phases := 0
	prevID := ""
	for _, tok := range e.Child {
		switch t := tok.(type) {
		case *etree.CharData:
			if !t.IsWhitespace() {
				v.errAt(t, CodeThinkingWithoutPhase, "text inside <thinking> but outside any <phase>")
			}
		case *etree.Comment:
			v.warnAt(t, CodeCommentOutsideSerpBlock, "comment inside <thinking>")
		case *etree.Element:
			if t.Tag != "phase" {
				v.errAt(t, CodeNestedTagNotAllowed, fmt.Sprintf("<%s> inside <thinking>, which holds <phase> elements only", t.Tag))
				continue
			}
			phases++
			prevID = v.checkPhase(t, prevID)
		}
	}
	if phases == 0 {
		v.errAt(e, CodeThinkingWithoutPhase, "<thinking> holds no <phase>")
	}
	v.sum.Phases = phases
}

// checkPhase checks one phase and returns the id the next phase must exceed.
func (v *validator) checkPhase(e *etree.Element, prevID string) string {
	sg := v.segs[v.at[e]]
	switch {
	case !sg.hasID:
		v.errAt(e, CodePhaseIDInvalid, "<phase> has no id attribute")
	case !isPositiveInt(sg.id):
		v.errAt(e, CodePhaseIDInvalid, fmt.Sprintf("phase id %q is not a positive integer (digits, no sign, no leading zero)", sg.id))
	case prevID != "" && !intGreater(sg.id, prevID):
		v.errAt(e, CodePhaseIDNotIncreasing, fmt.Sprintf("phase id %s is not greater than the previous id %s", sg.id, prevID))
	default:
		prevID = sg.id
	}
	titles := 0
	content := false // non-white-space text or an element before the title
	for _, tok := range e.Child {
		switch t := tok.(type) {
		case *etree.CharData:
			content = content || !t.IsWhitespace()
		case *etree.Comment:
			v.warnAt(t, CodeCommentOutsideSerpBlock, "comment inside <phase>")
		case *etree.Element:
			if t.Tag != "title" {
				v.errAt(t, CodeNestedTagNotAllowed, fmt.Sprintf("<%s> inside <phase>, which holds a <title> and plain text only", t.Tag))
				content = true
				continue
			}
			titles++
			switch {
			case titles > 1:
				v.errAt(t, CodePhaseTitleDuplicate, "a second <title> in the same <phase>")
			case content:
				v.errAt(t, CodePhaseTitleNotFirst, "<title> must come first in its <phase>")
			}
			v.checkPlain(t)
		}
	}
	if titles == 0 {
		v.errAt(e, CodePhaseTitleMissing, "<phase> has no <title>")
	}
	return prevID
}

// checkFinal checks <final>: Markdown, no elements, the serp queries block last.
func (v *validator) checkFinal(e *etree.Element) {
	block := -1
	for ci, tok := range e.Child {
		if c, ok := tok.(*etree.Comment); ok && v.isSerpBlock(c) {
			block = ci
		}
	}
	for ci, tok := range e.Child {
		switch t := tok.(type) {
		case *etree.Element:
			v.errAt(t, CodeNestedTagNotAllowed, fmt.Sprintf("<%s> inside <final>, which holds Markdown only", t.Tag))
		case *etree.Comment:
			if ci != block {
				v.warnAt(t, CodeCommentOutsideSerpBlock, "comment inside <final> that is not the serp queries block")
			}
		}
	}
	open, end := v.segs[v.at[e]], v.endTag(e)
	md := v.src[open.end:max(open.end, end.start)]
	switch {
	case block >= 0:
		v.serpNotLast(e.Child[block+1:])
		sg := v.segs[v.at[e.Child[block]]]
		v.checkSerpBlock(sg)
		md = markdownAround(v.src, open.end, sg, end.start)
	case !v.opts.SerpQueriesOptional:
		v.rep.err(end.start, CodeSerpQueriesMissing, "<final> does not end with the serp queries block")
	}
	v.sum.FinalChars = utf8.RuneCountInString(strings.TrimSpace(md))
}

// markdownAround returns <final>'s content without the serp block.
func markdownAround(src string, from int, block seg, to int) string {
	after := src[block.end:max(block.end, to)]
	if strings.TrimSpace(after) == "" {
		return src[from:block.start]
	}
	return src[from:block.start] + after
}

// serpNotLast reports the first thing other than white space after the serp block.
func (v *validator) serpNotLast(rest []etree.Token) {
	for _, tok := range rest {
		if !isSpaceToken(tok) {
			v.errAt(tok, CodeSerpQueriesNotLast, "only white space may follow the serp queries block before </final>")
			return
		}
	}
}

// isSerpBlock reports whether a comment is meant as the serp queries block.
func (v *validator) isSerpBlock(c *etree.Comment) bool {
	raw := v.segs[v.at[c]].text(v.src)
	inner := raw[len("<!--") : len(raw)-len("-->")]
	return strings.HasPrefix(strings.TrimLeft(inner, " \t\r\n"), "<serp_queries>")
}

// childIndex returns the index of e's first child element named tag, or -1.
func childIndex(e *etree.Element, tag string) int {
	for i, tok := range e.Child {
		if c, ok := tok.(*etree.Element); ok && c.Tag == tag {
			return i
		}
	}
	return -1
}

func isSpaceToken(tok etree.Token) bool {
	c, ok := tok.(*etree.CharData)
	return ok && c.IsWhitespace()
}

func (v *validator) errAt(tok etree.Token, code Code, msg string) { v.rep.err(v.pos(tok), code, msg) }

func (v *validator) warnAt(tok etree.Token, code Code, msg string) {
	v.rep.warn(v.pos(tok), code, msg)
}

// isPositiveInt reports a decimal positive integer without sign or leading zero.
func isPositiveInt(s string) bool {
	if s == "" || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// intGreater compares two positive integers written as digits, whatever their size.
func intGreater(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}
