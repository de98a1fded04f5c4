package thinkingml

import "strings"

// Sections reads a reply as a client receives it (after [Filter]) into what a person reads:
// the answer, which is the content of <final>, and the reasoning, which is everything
// before it (<think>, <serp> and <thinking>) with its tags dropped and each phase's title
// in bold, a paragraph of its own. What follows </final> is white space and is dropped. It
// serves clients of protocols that know only text and reasoning (package protocols).
//
// Like Filter it holds back only text that may still be a tag, and what it returns, joined,
// does not depend on how the reply is cut into chunks. A reply with no <final> is all
// reasoning. A Sections serves one reply and is not safe for concurrent use.
type Sections struct {
	where     section
	held      string // a possible tag, held back
	space     string // the reasoning's white space, waiting for what follows it
	reasoned  bool   // some reasoning was read
	answering bool   // some of the answer was read
}

// Piece is a run of the reply's text, of the answer or of the reasoning.
type Piece struct {
	Answer bool
	Text   string
}

type section uint8

const (
	inReasoning section = iota
	inAnswer
	afterAnswer
)

// maxSectionTag is the longest tag Sections holds back: `<phase id="…">` with a long id.
const maxSectionTag = 40

// readingOf is what a tag of the reasoning becomes in the reading; false for any other.
func readingOf(tag string) (string, bool) {
	switch tag {
	case "<think>", "<serp>", "<thinking>", "</thinking>":
		return "", true
	case "</think>", "</serp>", "</phase>":
		return "\n\n", true
	case "<title>":
		return "**", true
	case "</title>":
		return "**\n\n", true
	}
	return "", false
}

// Write reads the next chunk; the pieces it completes come back in order.
func (s *Sections) Write(chunk string) []Piece {
	var out []Piece
	text := s.held + chunk
	s.held = ""
	for text != "" {
		var n int
		switch s.where {
		case inReasoning:
			n = s.reasoning(text, &out)
		case inAnswer:
			n = s.answer(text, &out)
		default:
			n = len(text)
		}
		if n < 0 { // a possible tag at the end: hold it
			s.held = text
			break
		}
		text = text[n:]
	}
	return out
}

// Close ends the reply: what was held back was text.
func (s *Sections) Close() []Piece {
	var out []Piece
	if s.held != "" && s.where != afterAnswer {
		s.emit(&out, s.where == inAnswer, s.held)
	}
	s.held = ""
	return out
}

// reasoning consumes the start of text, before <final>: text up to the next '<', or a tag.
// -1 means text is a tag that may not be complete yet.
func (s *Sections) reasoning(text string, out *[]Piece) int {
	lt := strings.IndexByte(text, '<')
	if lt != 0 {
		if lt < 0 {
			lt = len(text)
		}
		s.emit(out, false, text[:lt])
		return lt
	}
	// A tag ends at the first '>', within maxSectionTag bytes, with no '<' or line break
	// before it; the same rule decides whether a tag not yet complete may still be one.
	gt := strings.IndexByte(text, '>')
	tag := text
	if gt >= 0 {
		tag = text[:gt+1]
	}
	if strings.ContainsAny(tag[1:], "<\n") || len(tag) > maxSectionTag || gt < 0 && len(tag) == maxSectionTag {
		s.emit(out, false, "<")
		return 1
	}
	if gt < 0 {
		return -1
	}
	switch {
	case tag == "<final>":
		s.where = inAnswer
	case strings.HasPrefix(tag, `<phase id="`):
	default:
		to, ok := readingOf(tag)
		if !ok {
			s.emit(out, false, "<") // not a tag of the reasoning: text
			return 1
		}
		s.emit(out, false, to)
	}
	return len(tag)
}

// answer consumes the start of text inside <final>: up to </final>, or all of it but a
// tail that may be the start of </final>.
func (s *Sections) answer(text string, out *[]Piece) int {
	const end = "</final>"
	if i := strings.Index(text, end); i >= 0 {
		s.emit(out, true, text[:i])
		s.where = afterAnswer
		return i + len(end)
	}
	keep := 0
	for k := min(len(end)-1, len(text)); k > 0; k-- {
		if strings.HasSuffix(text, end[:k]) {
			keep = k
			break
		}
	}
	if keep == len(text) {
		return -1
	}
	s.emit(out, true, text[:len(text)-keep])
	return len(text) - keep
}

// emit adds text to out, merged with the piece before it when of the same kind. White
// space before a section's first visible character is dropped; in the reasoning, white
// space waits for the next visible character, so the reasoning never ends in it and a run
// of blank lines (tags between lines leave them) becomes one.
func (s *Sections) emit(out *[]Piece, answer bool, text string) {
	if answer {
		if !s.answering {
			text = strings.TrimLeft(text, spaces)
			s.answering = text != ""
		}
		add(out, true, text)
		return
	}
	for text != "" {
		if n := len(text) - len(strings.TrimLeft(text, spaces)); n > 0 {
			s.space += text[:n]
			text = text[n:]
			continue
		}
		n := strings.IndexAny(text, spaces)
		if n < 0 {
			n = len(text)
		}
		if s.reasoned {
			add(out, false, collapse(s.space))
		}
		add(out, false, text[:n])
		s.space, s.reasoned = "", true
		text = text[n:]
	}
}

// collapse is a run of white space in the reasoning as it is read: a run with a blank line
// in it is one blank line.
func collapse(space string) string {
	if strings.Count(space, "\n") >= 2 {
		return "\n\n"
	}
	return space
}

// spaces is the white space Sections trims.
const spaces = " \t\r\n"

// add appends text to out, merged with the last piece when of the same kind.
func add(out *[]Piece, answer bool, text string) {
	if text == "" {
		return
	}
	if n := len(*out); n > 0 && (*out)[n-1].Answer == answer {
		(*out)[n-1].Text += text
		return
	}
	*out = append(*out, Piece{Answer: answer, Text: text})
}
