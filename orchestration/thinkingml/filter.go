package thinkingml

import (
	"bytes"
	"strings"
)

// Names of the blocks [Filter] withholds from the stream.
const (
	BlockUIJSON       = "AGENT_UI_JSON"
	BlockStatePatch   = "AGENT_STATE_PATCH"
	BlockSessionState = "SESSION_STATE"
	BlockMCPTag       = "MCP_TAG"
)

// Block is a piece of the reply that [Filter] took out of the stream for the
// post-processor. Name says which kind it is:
//
//   - [BlockUIJSON], [BlockStatePatch]: an <AGENT_UI_JSON> or <AGENT_STATE_PATCH> block.
//     Body is the text between its tags.
//   - [BlockSessionState]: an echoed [SESSION STATE] … [/SESSION STATE] block (the server
//     puts one in the model's instructions). Body is the text between the delimiters.
//   - [BlockMCPTag]: an invented tag whose name starts with "mcp_", either an element with
//     its content or a self-closing tag. Body is the raw withheld text, tags included.
type Block struct {
	Name string
	Body string
}

// Tags the filter acts on (docs/thinkingml.md).
const (
	tagUIJSON          = "<" + BlockUIJSON + ">"
	tagStatePatch      = "<" + BlockStatePatch + ">"
	tagSessionState    = "[SESSION STATE]"
	tagSessionStateEnd = "[/SESSION STATE]"
	tagMCP             = "<mcp_" // how an invented MCP tag begins
	tagFinal           = "<final>"
	tagFinalEnd        = "</final>"
	tagThinking        = "<thinking>"
	tagThinkingEnd     = "</thinking>"
	escapedFinal       = "&lt;final&gt;"
	escapedFinalEnd    = "&lt;/final&gt;"
)

// maxMCPTag is the longest opening mcp_ tag, attributes included, that the filter
// recognises. Text held back as a possible mcp_ tag is scanned again with every chunk, so
// the bound keeps that cost small; a longer "tag" is text.
const maxMCPTag = 4096

// thinkState is where the stream stands relative to the one real <thinking> element.
type thinkState uint8

const (
	beforeThinking thinkState = iota
	inThinking
	afterThinking
)

// Filter rewrites a reply stream chunk by chunk before the client sees it
// (docs/thinkingml.md). Inside <thinking> (from the first
// <thinking> to the first </thinking> after it), a literal <final> or </final> becomes
// &lt;final&gt; or &lt;/final&gt;. These are withheld and returned as [Block]s:
//
//   - <AGENT_UI_JSON>…</AGENT_UI_JSON> and <AGENT_STATE_PATCH>…</AGENT_STATE_PATCH>;
//   - an echoed [SESSION STATE]…[/SESSION STATE] block, delimiters included, spelled exactly
//     so (upper case, one space);
//   - an invented mcp_ element, <mcp_NAME …>…</mcp_NAME>, and a self-closing <mcp_NAME …/>.
//     The tag has the shape that docs/thinkingml.md calls a tag: "<mcp_", name characters,
//     then white space, '>' or "/>". Attributes are read as the validator reads them:
//     values may be quoted or unquoted, a quoted value may hold '>', and a '<' outside
//     quotes means there is no tag. The whole tag must fit in 4096 bytes. The element ends
//     at the first </mcp_NAME> after it, with the same name; white space may come before
//     its '>'. Elements of the same name do not nest. A lone </mcp_NAME> is not withheld.
//
// The output does not depend on how the reply is cut into chunks.
//
// Only text that may still become one of these openings, or a rewritten tag, is held back.
// It is let go as soon as it cannot. <thinking> and </thinking> pass through at once; they
// are only watched. A block's body is held until its end tag, and nothing inside it is
// interpreted. A block still open when the stream ends ([Filter.Close]) was never a block,
// and an opening still incomplete at the end was never an opening. Both are forwarded as
// text, read again as if their first byte were plain text. Nothing the model wrote is lost,
// a <final> in them is escaped inside thinking, and validation reports the stray tag.
//
// A Filter serves one stream at a time and is not safe for concurrent use.
type Filter struct {
	think thinkState
	block string // name of the open block, "" outside blocks
	open  string // the open block's opening tag, as written
	// closeTag ends the open block. For an mcp_ element it is "</" + name, which white
	// space and '>' must follow.
	closeTag []byte
	mcp      bool   // the open block is an mcp_ element
	body     []byte // the open block's body so far
	from     int    // where in body the search for closeTag goes on
	held     string // a possible start of a rewritten tag or a block, held back
	watch    string // the rest of <thinking> or </thinking> still to match, already forwarded
	buf      []byte
}

// NewFilter returns a Filter at the start of a stream.
func NewFilter() *Filter { return &Filter{} }

// Write filters the next chunk. out is the text to forward now (possibly empty) and blocks
// the blocks completed by this chunk, in order.
func (f *Filter) Write(chunk string) (out string, blocks []Block) {
	if f.held == "" && f.watch == "" && f.block == "" && indexSpecial(chunk) < 0 {
		return chunk, nil // the common case: plain text, nothing to do
	}
	s := chunk
	if f.held != "" {
		s, f.held = f.held+chunk, ""
	}
	f.buf = f.buf[:0]
	i := f.continueWatch(s)
	f.buf = append(f.buf, s[:i]...)
	for i < len(s) {
		if f.block != "" {
			n, body, done := f.feedBlock(s[i:])
			i += n
			if done {
				blocks = append(blocks, body)
			}
			continue
		}
		j := indexSpecial(s[i:])
		if j < 0 {
			f.buf = append(f.buf, s[i:]...)
			break
		}
		f.buf = append(f.buf, s[i:i+j]...)
		if s[i+j] == '<' {
			i = f.atLT(s, i+j, &blocks)
		} else {
			i = f.atBracket(s, i+j)
		}
	}
	if string(f.buf) == s {
		return s, nil // nothing was rewritten: no copy
	}
	return string(f.buf), blocks
}

// Close ends the stream: it forwards what was held back and an unterminated block as text
// (see [Filter]), and resets the Filter for a new stream.
func (f *Filter) Close() (out string, blocks []Block) {
	var text []byte
	for f.block != "" || f.held != "" {
		var rest string
		if f.block == "" {
			rest, f.held = f.held, ""
		} else {
			rest = f.open + string(f.body)
			f.block, f.body = "", f.body[:0]
		}
		// The first byte is text; the rest may hold tags of its own, a complete block even.
		text = append(text, rest[0])
		o, b := f.Write(rest[1:])
		text = append(text, o...)
		blocks = append(blocks, b...)
	}
	*f = Filter{buf: f.buf[:0], body: f.body[:0], closeTag: f.closeTag[:0]}
	return string(text), blocks
}

// indexSpecial returns the index of the first '<' or '[' in s, or -1.
func indexSpecial(s string) int {
	lt := strings.IndexByte(s, '<')
	before := s
	if lt >= 0 {
		before = s[:lt]
	}
	if br := strings.IndexByte(before, '['); br >= 0 {
		return br
	}
	return lt
}

// continueWatch goes on matching <thinking> or </thinking> when the previous chunk ended
// in the middle of one, and returns how much of s belongs to that match.
func (f *Filter) continueWatch(s string) int {
	if f.watch == "" {
		return 0
	}
	n := min(len(f.watch), len(s))
	switch {
	case s[:n] != f.watch[:n]:
		f.watch = ""
		return 0
	case n < len(f.watch):
		f.watch = f.watch[n:]
	default:
		f.watch = ""
		f.think++
	}
	return n
}

// atLT handles the '<' at s[i] outside blocks and returns where scanning goes on. A
// self-closing mcp_ tag is appended to blocks.
func (f *Filter) atLT(s string, i int, blocks *[]Block) int {
	rest := s[i:]
	if len(rest) == 1 {
		f.held = rest // a lone '<' may start anything
		return len(s)
	}
	// Only the tags whose second byte is rest[1] can match; <final> and </final> only
	// inside thinking.
	var tags [2]string
	switch rest[1] {
	case 'A':
		tags = [2]string{tagUIJSON, tagStatePatch}
	case 'f':
		if f.think == inThinking {
			tags[0] = tagFinal
		}
	case '/':
		if f.think == inThinking {
			tags[0] = tagFinalEnd
		}
	case 'm':
		return f.atMCP(s, i, blocks)
	}
	partial := false
	for _, tag := range tags {
		if tag == "" {
			continue
		}
		switch matchTag(rest, tag) {
		case tagFull:
			f.rewrite(tag)
			return i + len(tag)
		case tagPartial:
			partial = true
		}
	}
	if partial {
		f.held = rest // may still become a rewritten tag or a block: hold it back
		return len(s)
	}
	watched := [...]string{beforeThinking: tagThinking, inThinking: tagThinkingEnd}
	if f.think < afterThinking {
		tag := watched[f.think]
		switch matchTag(rest, tag) {
		case tagFull:
			f.buf = append(f.buf, tag...)
			f.think++
			return i + len(tag)
		case tagPartial:
			f.buf = append(f.buf, rest...)
			f.watch = tag[len(rest):]
			return len(s)
		}
	}
	f.buf = append(f.buf, '<')
	return i + 1
}

// atMCP handles a "<m" at s[i] outside blocks, which may start an mcp_ tag, and returns
// where scanning goes on. A self-closing tag is appended to blocks.
func (f *Filter) atMCP(s string, i int, blocks *[]Block) int {
	rest := s[i:]
	switch m, n, name, empty := matchMCP(rest); {
	case m == tagFull && empty:
		*blocks = append(*blocks, Block{Name: BlockMCPTag, Body: rest[:n]})
		return i + n
	case m == tagFull:
		f.openBlock(BlockMCPTag, rest[:n])
		f.closeTag = append(append(f.closeTag, "</"...), name...)
		f.mcp = true
		return i + n
	case m == tagPartial:
		f.held = rest
		return len(s)
	}
	f.buf = append(f.buf, '<')
	return i + 1
}

// atBracket handles the '[' at s[i] outside blocks and returns where scanning goes on.
func (f *Filter) atBracket(s string, i int) int {
	switch matchTag(s[i:], tagSessionState) {
	case tagFull:
		f.openBlock(BlockSessionState, tagSessionState)
		f.closeTag = append(f.closeTag, tagSessionStateEnd...)
		return i + len(tagSessionState)
	case tagPartial:
		f.held = s[i:]
		return len(s)
	}
	f.buf = append(f.buf, '[')
	return i + 1
}

// rewrite acts on a complete rewritten tag.
func (f *Filter) rewrite(tag string) {
	switch tag {
	case tagFinal:
		f.buf = append(f.buf, escapedFinal...)
	case tagFinalEnd:
		f.buf = append(f.buf, escapedFinalEnd...)
	default:
		f.openBlock(tag[1:len(tag)-1], tag)
		f.closeTag = append(append(append(f.closeTag, "</"...), f.block...), '>')
	}
}

// openBlock starts withholding a block; the caller then sets closeTag (left empty here)
// and mcp.
func (f *Filter) openBlock(name, open string) {
	f.block, f.open, f.mcp = name, open, false
	f.closeTag, f.body, f.from = f.closeTag[:0], f.body[:0], 0
}

// feedBlock adds rest to the open block's body and looks for the end tag. It returns how
// much of rest it consumed and, when the end tag was found, the finished block.
func (f *Filter) feedBlock(rest string) (int, Block, bool) {
	old := len(f.body)
	f.body = append(f.body, rest...)
	for {
		k := bytes.Index(f.body[f.from:], f.closeTag)
		if k < 0 {
			f.from = max(f.from, len(f.body)-len(f.closeTag)+1) // the end tag may begin here
			return len(rest), Block{}, false
		}
		k += f.from
		end := k + len(f.closeTag)
		if f.mcp { // </mcp_NAME, white space, '>'
			for end < len(f.body) && isSpace(f.body[end]) {
				end++
			}
			if end == len(f.body) {
				f.from = k // the end tag may go on in the next chunk
				return len(rest), Block{}, false
			}
			if f.body[end] != '>' {
				f.from = k + 1
				continue
			}
			end++
		}
		b := Block{Name: f.block, Body: string(f.body[:k])}
		if f.mcp {
			b.Body = f.open + string(f.body[:end])
		}
		consumed := end - old // > 0: an end tag complete before this chunk was found before
		f.block, f.open, f.body, f.from = "", "", f.body[:0], 0
		return consumed, b, true
	}
}

// tagMatch says how the text at a '<' relates to a tag.
type tagMatch uint8

const (
	tagNone    tagMatch = iota
	tagPartial          // the text ends before the tag would, and so far agrees with it
	tagFull
)

func matchTag(rest, tag string) tagMatch {
	switch {
	case strings.HasPrefix(rest, tag):
		return tagFull
	case len(rest) < len(tag) && strings.HasPrefix(tag, rest):
		return tagPartial
	}
	return tagNone
}

// matchMCP reads an opening or self-closing mcp_ tag at the start of rest (see [Filter]).
// When it is complete (tagFull), n is its length, name its name and empty tells a
// self-closing tag. tagPartial means rest ends before the tag could be complete.
//
// Every path that reaches the end of rest answers tagPartial, so a tagFull or tagNone
// answer stays the same however rest goes on: that keeps the filter independent of
// chunking.
func matchMCP(rest string) (m tagMatch, n int, name string, empty bool) {
	if len(rest) < len(tagMCP) || rest[:len(tagMCP)] != tagMCP {
		return matchTag(rest, tagMCP), 0, "", false
	}
	incomplete := tagPartial
	r := rest
	if len(r) >= maxMCPTag {
		r, incomplete = r[:maxMCPTag], tagNone // a tag would not end within maxMCPTag bytes
	}
	k := len(tagMCP)
	for k < len(r) && isNameByte(r[k]) {
		k++
	}
	name = r[1:k]
	switch {
	case k >= len(r):
		return incomplete, 0, "", false
	case r[k] == '/':
		if k+1 >= len(r) {
			return incomplete, 0, "", false
		}
		if r[k+1] != '>' {
			return tagNone, 0, "", false
		}
	case r[k] != '>' && !isSpace(r[k]):
		return tagNone, 0, "", false
	}
	// Attributes, read as scanner.readAttrs reads them.
	for {
		k = skipSpace(r, k)
		if k >= len(r) {
			return incomplete, 0, "", false
		}
		switch r[k] {
		case '>':
			return tagFull, k + 1, name, false
		case '<':
			return tagNone, 0, "", false
		case '/':
			if k+1 >= len(r) {
				return incomplete, 0, "", false
			}
			if r[k+1] == '>' {
				return tagFull, k + 2, name, true
			}
		}
		a := k
		for k < len(r) && isAttrNameByte(r[k]) {
			k++
		}
		if k == a {
			k++ // a stray byte such as '=' or '"': taken as a name, as the validator does
		}
		if k = skipSpace(r, k); k >= len(r) {
			return incomplete, 0, "", false
		}
		if r[k] != '=' {
			continue
		}
		if k = skipSpace(r, k+1); k >= len(r) {
			return incomplete, 0, "", false
		}
		if q := r[k]; q == '"' || q == '\'' {
			e := strings.IndexByte(r[k+1:], q)
			if e < 0 {
				return incomplete, 0, "", false
			}
			k += e + 2
			continue
		}
		for k < len(r) && !isSpace(r[k]) && r[k] != '>' && r[k] != '<' && !strings.HasPrefix(r[k:], "/>") {
			k++
		}
	}
}
