package thinkingml

import (
	"bytes"
	"strings"
)

// Names of the blocks [Filter] withholds from the stream.
const (
	BlockUIJSON     = "AGENT_UI_JSON"
	BlockStatePatch = "AGENT_STATE_PATCH"
)

// Block is the body of an <AGENT_UI_JSON> or <AGENT_STATE_PATCH> block, taken out of the
// stream for the post-processor; Name is [BlockUIJSON] or [BlockStatePatch].
type Block struct {
	Name string
	Body string
}

// Tags the filter acts on (thinkingml.md §5).
const (
	tagUIJSON       = "<" + BlockUIJSON + ">"
	tagStatePatch   = "<" + BlockStatePatch + ">"
	tagFinal        = "<final>"
	tagFinalEnd     = "</final>"
	tagThinking     = "<thinking>"
	tagThinkingEnd  = "</thinking>"
	escapedFinal    = "&lt;final&gt;"
	escapedFinalEnd = "&lt;/final&gt;"
)

// thinkState is where the stream stands relative to the one real <thinking> element.
type thinkState uint8

const (
	beforeThinking thinkState = iota
	inThinking
	afterThinking
)

// Filter rewrites a reply stream chunk by chunk before the client sees it
// (thinkingml.md §5): inside <thinking> (from the first <thinking> to the first
// </thinking> after it) a literal <final> or </final> becomes &lt;final&gt; or
// &lt;/final&gt;, and <AGENT_UI_JSON>…</AGENT_UI_JSON> and
// <AGENT_STATE_PATCH>…</AGENT_STATE_PATCH> blocks are withheld, their bodies returned as
// [Block]s. The output does not depend on how the reply is cut into chunks.
//
// Only text that may still become one of the rewritten tags is held back, and it is let go
// as soon as it cannot; <thinking> and </thinking> pass through at once, being only
// watched. A block's body is held until its end tag. A block still open when the stream
// ends ([Filter.Close]) was never a block: its opening tag and body are forwarded as text,
// read as if the opening tag had been plain text, so nothing the model wrote is lost and
// validation then reports the stray tag.
//
// A Filter serves one stream at a time and is not safe for concurrent use.
type Filter struct {
	think    thinkState
	block    string // name of the open block, "" outside blocks
	closeTag []byte // "</" + block + ">"
	body     []byte // the open block's body so far
	held     string // a possible start of a rewritten tag, held back
	watch    string // the rest of <thinking> or </thinking> still to match, already forwarded
	buf      []byte
}

// NewFilter returns a Filter at the start of a stream.
func NewFilter() *Filter { return &Filter{} }

// Write filters the next chunk. out is the text to forward now (possibly empty) and blocks
// the blocks completed by this chunk, in order.
func (f *Filter) Write(chunk string) (out string, blocks []Block) {
	if f.held == "" && f.watch == "" && f.block == "" && strings.IndexByte(chunk, '<') < 0 {
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
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			f.buf = append(f.buf, s[i:]...)
			break
		}
		f.buf = append(f.buf, s[i:i+j]...)
		i = f.atLT(s, i+j)
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
		if f.block == "" {
			text = append(text, f.held...)
			f.held = ""
			continue
		}
		rest := string(f.body)
		text = append(text, '<')
		text = append(text, f.block...)
		text = append(text, '>')
		f.block, f.body = "", f.body[:0]
		o, b := f.Write(rest) // the body may hold tags of its own, a complete block even
		text = append(text, o...)
		blocks = append(blocks, b...)
	}
	*f = Filter{buf: f.buf[:0], body: f.body[:0], closeTag: f.closeTag[:0]}
	return string(text), blocks
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

// atLT handles the '<' at s[i] outside blocks and returns where scanning goes on.
func (f *Filter) atLT(s string, i int) int {
	rest := s[i:]
	partial := false
	for _, tag := range [...]string{tagUIJSON, tagStatePatch, tagFinal, tagFinalEnd} {
		if (tag == tagFinal || tag == tagFinalEnd) && f.think != inThinking {
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
		f.held = rest // may still become a rewritten tag: hold it back
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

// rewrite acts on a complete rewritten tag.
func (f *Filter) rewrite(tag string) {
	switch tag {
	case tagFinal:
		f.buf = append(f.buf, escapedFinal...)
	case tagFinalEnd:
		f.buf = append(f.buf, escapedFinalEnd...)
	default:
		f.block = tag[1 : len(tag)-1]
		f.closeTag = append(append(append(f.closeTag[:0], "</"...), f.block...), '>')
		f.body = f.body[:0]
	}
}

// feedBlock adds rest to the open block's body and looks for the end tag. It returns how
// much of rest it consumed and, when the end tag was found, the finished block.
func (f *Filter) feedBlock(rest string) (int, Block, bool) {
	old := len(f.body)
	f.body = append(f.body, rest...)
	from := max(0, old-len(f.closeTag)+1) // the end tag may have begun in an earlier chunk
	k := bytes.Index(f.body[from:], f.closeTag)
	if k < 0 {
		return len(rest), Block{}, false
	}
	k += from
	b := Block{Name: f.block, Body: string(f.body[:k])}
	consumed := k + len(f.closeTag) - old
	f.block, f.body = "", f.body[:0]
	return consumed, b, true
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
