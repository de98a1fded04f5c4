package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Why a decoder of our own rather than r3labs/sse's EventStreamReader (docs/dependencies.md allows
// either). That reader splits the stream into raw event blocks and leaves field parsing to
// an unexported function, so a field parser is needed anyway; and as a framer it is unsound
// for an LLM stream:
//   - at EOF it returns whatever is buffered as a complete event (event.go, split func:
//     `if atEOF { return len(data), data, nil }`). The SSE spec says an event without its
//     blank line must be discarded; a connection cut in the middle of an event would be
//     dispatched as if whole, which hides the truncation we must report.
//   - it maps context.Canceled to io.EOF (event.go:108), turning a cancellation into what
//     looks like a clean end of stream.
//   - each time more bytes arrive it re-runs five bytes.Index over the whole buffered event,
//     so a large event delivered in small reads costs quadratic time.
//   - it does not strip a leading byte-order mark.
// The decoder below is line based (a bufio.Scanner with a raised limit), follows the
// WHATWG event-stream rules, and is fuzzed by FuzzDecode.

// maxLineBytes caps one line of the stream, and maxEventBytes the data of one event. The
// terminal response.completed event carries the whole output (MCP tool results included),
// which can run past the 64 KiB default of bufio.Scanner; openai-go had to raise its own
// limit after "token too long" failures (openai/openai-go#368).
const (
	maxLineBytes  = 8 << 20
	maxEventBytes = 8 << 20
)

// initialLineBytes is the line buffer a stream starts with. Deltas are a few hundred bytes;
// the buffer doubles for a longer line (the terminal event), so a waiting stream holds a
// small buffer instead of bufio's default, which was a large share of what a waiting
// generation held. Reads stay large: the transport's own buffer is in front of it.
const initialLineBytes = 512

// errEventTooLarge reports an event whose data lines together exceed maxEventBytes.
var errEventTooLarge = errors.New("server-sent event too large")

// frame is one dispatched server-sent event: its `event:` name (empty when the server sent
// none) and its data lines joined by "\n". data is the decoder's own buffer, valid until the
// next call to next: a stream has thousands of frames and each is parsed once, so it is
// neither copied nor kept.
type frame struct {
	name string
	data []byte
}

// decoder reads frames from an event stream. It keeps only the current event in memory.
type decoder struct {
	sc      *bufio.Scanner
	started bool
	name    string
	data    bytes.Buffer
	hasData bool
}

// newDecoder returns a decoder reading from r.
func newDecoder(r io.Reader) *decoder {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, initialLineBytes), maxLineBytes)
	sc.Split(scanSSELines)
	return &decoder{sc: sc}
}

// next returns the next complete event. At the end of the stream it returns io.EOF; a
// partly received event (no blank line after it) is dropped, as the SSE spec requires.
// Other errors come from the underlying reader or from the size limits.
func (d *decoder) next() (frame, error) {
	for d.sc.Scan() {
		line := d.sc.Bytes()
		if !d.started {
			d.started = true
			line = bytes.TrimPrefix(line, []byte("\ufeff"))
		}
		if len(line) == 0 {
			if f, ok := d.dispatch(); ok {
				return f, nil
			}
			continue
		}
		if err := d.field(line); err != nil {
			return frame{}, err
		}
	}
	if err := d.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return frame{}, fmt.Errorf("server-sent event line longer than %d bytes: %w", maxLineBytes, err)
		}
		return frame{}, err
	}
	return frame{}, io.EOF
}

// field applies one non-empty line to the event being built.
func (d *decoder) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment, e.g. OpenRouter's ": OPENROUTER PROCESSING"
	}
	name, value, found := bytes.Cut(line, []byte(":"))
	if found {
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(name) {
	case "event":
		d.name = eventName(value)
	case "data":
		if d.data.Len()+len(value)+1 > maxEventBytes {
			return fmt.Errorf("%w: more than %d bytes of data", errEventTooLarge, maxEventBytes)
		}
		if d.hasData {
			d.data.WriteByte('\n')
		}
		d.data.Write(value)
		d.hasData = true
	}
	// id and retry only matter for EventSource reconnection, which a POSTed
	// stream cannot do; unknown fields are ignored by the spec.
	return nil
}

// dispatch ends the current event. An event without data lines is dropped (the spec's
// rule), so a lone `event:` line never reaches the parser.
func (d *decoder) dispatch() (frame, bool) {
	defer func() {
		d.name = ""
		d.data.Reset()
		d.hasData = false
	}()
	if !d.hasData {
		return frame{}, false
	}
	return frame{name: d.name, data: d.data.Bytes()}, true
}

// eventName returns the event name in value, without allocating for the names a stream
// repeats on every frame.
func eventName(value []byte) string {
	switch string(value) { // compiled to comparisons: no conversion is allocated
	case evTextDelta:
		return evTextDelta
	case evMCPArgumentsDelta:
		return evMCPArgumentsDelta
	default:
		return string(value)
	}
}

// scanSSELines is a bufio.SplitFunc for the three line endings the event-stream format
// allows: "\r\n", "\n" and a lone "\r". It searches for '\n' first and then for '\r' only
// before it, so each call is linear in the line it returns.
func scanSSELines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	lf := bytes.IndexByte(data, '\n')
	head := data
	if lf >= 0 {
		head = data[:lf]
	}
	if cr := bytes.IndexByte(head, '\r'); cr >= 0 {
		switch {
		case cr+1 < len(data) && data[cr+1] == '\n':
			return cr + 2, data[:cr], nil
		case cr+1 < len(data) || atEOF:
			return cr + 1, data[:cr], nil
		default:
			return 0, nil, nil // a "\r" at the end of the buffer may be half of "\r\n"
		}
	}
	if lf >= 0 {
		return lf + 1, data[:lf], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}
