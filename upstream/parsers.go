package upstream

import (
	"sync"

	"github.com/valyala/fastjson"
)

// parserPool lends fastjson parsers to streams for one frame at a time. A parser keeps
// the values of the last frame it parsed and grows to the largest it has seen, so a
// stream that owned one allocated it anew every turn and grew it over its first frames
// and again for the terminal event, which repeats the whole reply: a large share of a
// turn's allocations. Lent per frame, a parser
// that has already grown serves the next stream too, and a stream waiting on the upstream
// holds none.
//
// A parser's values are valid until it parses again, so nothing parsed may be kept past
// the frame: the readers copy what they keep (deltaOf, responseEventOf). The zero value
// is ready; a nil pool lends a new parser each time.
type parserPool struct{ pool sync.Pool }

// get lends a parser.
func (p *parserPool) get() *fastjson.Parser {
	if p != nil {
		if fp, ok := p.pool.Get().(*fastjson.Parser); ok {
			return fp
		}
	}
	return new(fastjson.Parser)
}

// put takes a parser back; the caller holds nothing it parsed.
func (p *parserPool) put(fp *fastjson.Parser) {
	if p != nil {
		p.pool.Put(fp)
	}
}
