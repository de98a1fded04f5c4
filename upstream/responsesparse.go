package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// wireEvent is the union of the fields the client reads from any Responses stream event.
// Unknown fields (obfuscation, logprobs, timings, …) are ignored by encoding/json.
type wireEvent struct {
	Type     string        `json:"type"`
	Delta    string        `json:"delta"`
	ItemID   string        `json:"item_id"`
	Item     *wireItem     `json:"item"`
	Response *wireResponse `json:"response"`
	// The error event comes nested ({"error":{…}}) in production and flat ({"code",
	// "message"}) in the documented schema (docs/upstreams.md); both are read. Error
	// stays raw because some servers send a bare string there.
	Error   json.RawMessage `json:"error"`
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
	// Refusal is the whole refusal of response.refusal.done.
	Refusal string `json:"refusal"`
}

// wireResponse is the response object of created, completed, failed and incomplete.
type wireResponse struct {
	ID                string     `json:"id"`
	Model             string     `json:"model"`
	Status            string     `json:"status"`
	Usage             *Usage     `json:"usage"`
	Error             *wireError `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// wireError is an error object: type, code (a string, a number or null) and message.
type wireError struct {
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// wireItem is an output item; only mcp_call items are turned into events.
type wireItem struct {
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Status      string          `json:"status"`
	ServerLabel string          `json:"server_label"`
	Name        string          `json:"name"`
	Arguments   string          `json:"arguments"`
	Output      json.RawMessage `json:"output"`
	Error       json.RawMessage `json:"error"`
}

// ErrNoTerminal is behind the provider_error of a stream that ended without
// response.completed, failed, incomplete or error (docs/upstreams.md: treat as failure).
var ErrNoTerminal = errors.New("stream ended without a terminal event")

// Event names the decoder and the parser meet on nearly every frame.
const (
	evTextDelta         = "response.output_text.delta"
	evMCPArgumentsDelta = "response.mcp_call_arguments.delta"
)

// streamState is what the parser remembers across events of one response.
type streamState struct {
	requestID string
	// parsers lends the parser of each frame for the paths that need no encoding/json
	// (text deltas, most of a stream's frames, and events that yield nothing; see strict).
	parsers *parserPool
	// failed holds the ids of MCP calls that got mcp_call.failed; the failure detail only
	// comes with the item's output_item.done, which follows.
	failed map[string]bool
	// refusal is the model's refusal so far (response.refusal.delta): a response that
	// completes with one is a refusal, not an answer.
	refusal strings.Builder
}

// addRefusal keeps a piece of the refusal, up to maxRefusal bytes.
func (st *streamState) addRefusal(r string) {
	if room := maxRefusal - st.refusal.Len(); room > 0 {
		st.refusal.WriteString(r[:min(len(r), room)])
	}
}

// end is the outcome of a terminal completed event: the completion, or the refusal the
// response held instead of an answer.
func (st *streamState) end(ev Event) (Event, error) {
	if ev.Kind == EventCompleted && st.refusal.Len() > 0 {
		return Event{}, &Error{Kind: KindRefused, UpstreamCode: "refusal", Message: st.refusal.String()}
	}
	return ev, nil
}

// readEvents decodes r and yields the events of one response until a terminal event, a
// failure, or the consumer stops. It returns nil after EventCompleted, errStopped when the
// consumer stopped, and otherwise the *Error that ended the stream, which it has not
// yielded. It looks at no context: the caller decides what a read error caused by
// cancellation means.
func readEvents(r io.Reader, requestID string, parsers *parserPool, yield func(Event, error) bool) error {
	dec := newDecoder(r)
	st := &streamState{requestID: requestID, parsers: parsers}
	for {
		f, err := dec.next()
		if errors.Is(err, io.EOF) {
			return &Error{Kind: KindProvider, Message: ErrNoTerminal.Error(), err: ErrNoTerminal}
		}
		if err != nil {
			return readError(err)
		}
		if bytes.Equal(f.data, []byte("[DONE]")) {
			// openai-go stops here; for the Responses API it is never the terminal event.
			return &Error{Kind: KindProvider, Message: ErrNoTerminal.Error(), err: ErrNoTerminal}
		}
		ev, terminal, err := st.parse(f)
		if err != nil {
			return err
		}
		if ev.Kind != "" && !yield(ev, nil) {
			return errStopped
		}
		if terminal {
			return nil
		}
	}
}

// parse turns one frame into at most one Event. terminal reports the end of the response;
// a non-nil error is a terminal failure.
func (st *streamState) parse(f frame) (ev Event, terminal bool, err error) {
	p := st.parsers.get()
	ev, terminal, ok := st.parseFast(p, f)
	st.parsers.put(p) // ev holds copies only
	if !ok {
		ev, terminal, err = st.parseAny(f)
	}
	if terminal && err == nil {
		ev, err = st.end(ev)
	}
	return ev, terminal, err
}

// parseFast is parse for the frames fastjson can answer for, parsed with p; ok is false
// for the rest.
func (st *streamState) parseFast(p *fastjson.Parser, f frame) (ev Event, terminal, ok bool) {
	o := strict(p, f)
	if o == nil {
		return Event{}, false, false
	}
	if ev, ok := deltaOf(o, f.name); ok {
		return ev, false, true
	}
	if typ, item, ok := ignoredFields(o, f.name); ok {
		if ignorable(typ, item) {
			return Event{}, false, true
		}
		if it, done, ok := mcpItemOf(typ, item); ok {
			kind := EventToolCallStarted
			if done {
				kind = EventToolCallDone
			}
			return Event{Kind: kind, Tool: st.call(it, done)}, false, true
		}
	}
	if ev, terminal, ok := responseEventOf(o, f.name); ok {
		if ev.Kind == EventCreated {
			ev.UpstreamRequestID = st.requestID
		}
		return ev, terminal, true
	}
	return Event{}, false, false
}

// strict parses f once with p for the paths that need no encoding/json (deltaOf,
// ignorable, responseEventOf). It returns nil, leaving the frame to parseAny, when the
// frame is not an object or fastjson would read it otherwise than encoding/json does
// (lenientAt): those paths must answer exactly as encoding/json would.
func strict(p *fastjson.Parser, f frame) *fastjson.Object {
	v, err := p.ParseBytes(f.data)
	if err != nil || v.Type() != fastjson.TypeObject || lenientAt(f.data) {
		return nil
	}
	return v.GetObject()
}

// parseAny is parse for any event, with encoding/json.
func (st *streamState) parseAny(f frame) (ev Event, terminal bool, err error) {
	var w wireEvent
	if err := json.Unmarshal(f.data, &w); err != nil {
		return Event{}, true, &Error{Kind: KindProvider, Message: "malformed stream event " + truncate(string(f.data), 200), err: err}
	}
	typ := firstNonEmpty(w.Type, f.name)
	switch typ {
	case "response.created":
		if w.Response != nil {
			ev = Event{Kind: EventCreated, ResponseID: w.Response.ID, Model: w.Response.Model}
		} else {
			ev = Event{Kind: EventCreated}
		}
		ev.UpstreamRequestID = st.requestID
	case evTextDelta:
		ev = Event{Kind: EventTextDelta, Delta: w.Delta}
	case "response.output_item.added":
		if w.Item != nil && w.Item.Type == "mcp_call" {
			ev = Event{Kind: EventToolCallStarted, Tool: st.toolCall(w.Item, false)}
		}
	case "response.mcp_call.failed":
		if st.failed == nil {
			st.failed = make(map[string]bool)
		}
		st.failed[w.ItemID] = true
	case "response.output_item.done":
		if w.Item != nil && w.Item.Type == "mcp_call" {
			ev = Event{Kind: EventToolCallDone, Tool: st.toolCall(w.Item, true)}
		}
	case "response.refusal.delta":
		st.addRefusal(w.Delta)
	case "response.refusal.done":
		if st.refusal.Len() == 0 {
			st.addRefusal(w.Refusal)
		}
	case "response.completed":
		return completed(w.Response), true, nil
	case "response.failed", "response.incomplete", "error":
		return Event{}, true, streamError(typ, &w)
	case "":
		// Chat-style servers (OpenRouter) put a top-level error on an untyped event after
		// HTTP 200; both OpenAI SDKs treat that as fatal.
		// Its code is often HTTP-like (502, 429) and is mapped like that status, so a
		// provider that is down before the first token can be failed over.
		if len(w.Error) > 0 && !bytes.Equal(w.Error, []byte("null")) {
			e := streamError("error", &w)
			if n, err := strconv.Atoi(e.UpstreamCode); err == nil {
				e.Kind = statusCode(n)
			}
			return Event{}, true, e
		}
	}
	return ev, false, nil
}

// deltaOf reads a text delta from o, the frame strict parsed, without encoding/json, whose
// reflection and allocations were a tenth of a turn's CPU: a delta costs one allocation, its
// text. Anything else (other events, a delta that is not a plain string, a field
// encoding/json would match by case or fail to read, which parseAny reports) reports false.
func deltaOf(o *fastjson.Object, name string) (Event, bool) {
	var typ, delta *fastjson.Value
	ok := true
	o.Visit(func(key []byte, v *fastjson.Value) { // the last of repeated keys wins, as in encoding/json
		switch string(key) {
		case "type":
			typ = lastSet(typ, v)
		case "delta":
			delta = v
		default:
			ok = ok && (!mayBeWireField(key) || readsAsWireEvent(key, v))
		}
	})
	if !ok || !isString(typ, evTextDelta, name) || delta == nil || delta.Type() != fastjson.TypeString {
		return Event{}, false
	}
	text, _ := delta.StringBytes() // valid UTF-8: strict saw to it
	return Event{Kind: EventTextDelta, Delta: string(text)}, true
}

// mayBeWireField reports whether key could name a wireEvent field, exactly or by case
// folding: each of their names begins with one of these ASCII letters, and no other
// character folds to one of them. A delta frame's other keys (sequence_number,
// output_index, logprobs, obfuscation) are passed over without a look at their values.
func mayBeWireField(key []byte) bool {
	if len(key) == 0 {
		return false
	}
	switch key[0] | 0x20 { // ASCII lower case; other bytes stay other
	case 't', 'd', 'i', 'r', 'e', 'c', 'm':
		return true
	}
	return false
}

// lenientAt reports what fastjson accepts but encoding/json refuses or reads otherwise:
// invalid UTF-8 (fastjson keeps the bytes where encoding/json makes each one U+FFFD, and a
// response id with such bytes would be refused by PostgreSQL's text columns), a
// control character (not allowed inside a string; compact JSON has none between tokens),
// an escape JSON does not define (fastjson keeps "\\0" as written), and a \uD800-\uDFFF
// escape (fastjson keeps a lone one as written where encoding/json makes it U+FFFD; a valid
// pair goes the general way too, for simplicity: servers send UTF-8), a token outside
// strings that breaks JSON's grammar (see oddToken), and an unterminated string. Such frames
// take the general path, which reads them exactly as before.
//
// It reads the frame in one pass (after utf8.Valid's): the frames that repeat the whole
// reply are most of a turn's bytes, and two passes, one for escapes and control characters
// and one for tokens, were a quarter of reading a turn's events.
func lenientAt(data []byte) bool {
	if !utf8.Valid(data) {
		return true
	}
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			if i = stringEnd(data, i); i < 0 {
				return true
			}
		case c < 0x20 || c == '\\': // a backslash outside a string is no JSON at all
			return true
		default:
			n, odd := oddToken(data[i:])
			if odd {
				return true
			}
			i += n - 1
		}
	}
	return false
}

// stringEnd returns the index of the quote closing the string that opens at data[open],
// or -1 when it does not close or holds what fastjson reads otherwise than encoding/json:
// a control character or an escape escapeLen refuses.
func stringEnd(data []byte, open int) int {
	for i := open + 1; i < len(data); i++ {
		c := data[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		if c != '\\' {
			if c == '"' {
				return i
			}
			return -1
		}
		n := escapeLen(data[i+1:])
		if n == 0 {
			return -1
		}
		i += n
	}
	return -1
}

// escapeLen is the length of the escape after a backslash, or 0 when it is not one JSON
// defines or is a surrogate.
func escapeLen(rest []byte) int {
	if len(rest) == 0 {
		return 0
	}
	switch rest[0] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 1
	case 'u':
		if len(rest) < 5 || rest[1] == 'd' || rest[1] == 'D' {
			return 0
		}
		for _, h := range rest[1:5] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return 0
			}
		}
		return 5
	}
	return 0
}

// lastSet is the value a string field holds after a repeated key: the later value, unless
// it is null, which encoding/json reads as "leave the field as it was".
func lastSet(earlier, later *fastjson.Value) *fastjson.Value {
	if earlier != nil && later.Type() == fastjson.TypeNull {
		return earlier
	}
	return later
}

// isString reports whether v, the frame's type field, names want: as a string, or absent
// or null with the SSE event name saying it.
func isString(v *fastjson.Value, want, name string) bool {
	if v == nil || v.Type() == fastjson.TypeNull {
		return name == want
	}
	b, err := v.StringBytes()
	return err == nil && (string(b) == want || len(b) == 0 && name == want)
}

// toolCall converts an mcp_call item encoding/json read. done says whether it is the final
// item (with output and error) or the skeleton of output_item.added.
func (st *streamState) toolCall(it *wireItem, done bool) *ToolCall {
	m := mcpItem{id: it.ID, status: it.Status, serverLabel: it.ServerLabel, name: it.Name, arguments: it.Arguments}
	if done {
		m.output, m.errText = rawString(it.Output), flattenToolError(it.Error)
	}
	return st.call(m, done)
}

// call makes the tool call of an mcp_call item, read by either path.
func (st *streamState) call(it mcpItem, done bool) *ToolCall {
	tc := &ToolCall{ID: it.id, ServerLabel: it.serverLabel, Name: it.name, Arguments: it.arguments}
	if !done {
		return tc
	}
	tc.Output, tc.Error = it.output, it.errText
	tc.Failed = st.failed[it.id] || it.status == "failed" || tc.Error != ""
	delete(st.failed, it.id)
	return tc
}

// completed builds the EventCompleted of response.completed.
func completed(r *wireResponse) Event {
	ev := Event{Kind: EventCompleted}
	if r != nil {
		ev.ResponseID, ev.Model, ev.Usage = r.ID, r.Model, r.Usage
	}
	return ev
}

// streamError builds the provider_error of a failing terminal event.
func streamError(typ string, w *wireEvent) *Error {
	e := &Error{Kind: KindProvider}
	switch typ {
	case "error":
		var nested wireError
		switch {
		case len(w.Error) > 0 && w.Error[0] == '{' && json.Unmarshal(w.Error, &nested) == nil:
			// nested, the production shape
			e.UpstreamCode = firstNonEmpty(rawString(nested.Code), nested.Type)
			e.Message = nested.Message
		case len(w.Error) > 0 && w.Error[0] == '"':
			e.Message = rawString(w.Error)
		default: // flat, the documented shape
			e.UpstreamCode = rawString(w.Code)
			e.Message = w.Message
		}
		e.Message = firstNonEmpty(e.Message, "upstream sent an error event")
		e.Kind = codeKind(e.UpstreamCode)
	case "response.failed":
		e.Message = "response failed"
		if w.Response != nil && w.Response.Error != nil {
			e.UpstreamCode = firstNonEmpty(rawString(w.Response.Error.Code), w.Response.Error.Type)
			e.Message = firstNonEmpty(w.Response.Error.Message, e.Message)
		}
		e.Kind = codeKind(e.UpstreamCode)
	case "response.incomplete":
		e.Message = "response incomplete"
		if w.Response != nil && w.Response.IncompleteDetails != nil && w.Response.IncompleteDetails.Reason != "" {
			e.UpstreamCode = w.Response.IncompleteDetails.Reason
			e.Message = "response incomplete: " + e.UpstreamCode
		}
		if e.UpstreamCode == "max_output_tokens" {
			e.Kind = KindTruncated
		}
	}
	return e
}

// flattenToolError renders an mcp_call item's error as one line. It is null, a string (SDKs
// before openai-python f38355ec), or an object: {type, code, message} for protocol and HTTP
// errors, {type, content} for a tool that returned isError. The message or the content's
// text wins; failing that the type; failing that the raw JSON.
func flattenToolError(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] != '{' {
		return rawString(raw)
	}
	var obj struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return string(raw)
	}
	text := firstNonEmpty(obj.Message, contentText(obj.Content))
	if code := rawString(obj.Code); code != "" && text != "" {
		text = fmt.Sprintf("%s (code %s)", text, code)
	}
	return firstNonEmpty(text, obj.Type, string(raw))
}

// contentText joins the text parts of an MCP content value: a string, one part or a list
// of parts ({"type":"text","text":…}). Anything else is returned as compact JSON.
func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	type part struct {
		Text string `json:"text"`
	}
	var parts []part
	if json.Unmarshal(raw, &parts) != nil {
		var one part
		if json.Unmarshal(raw, &one) != nil {
			return rawString(raw)
		}
		parts = []part{one}
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	if len(texts) == 0 {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			return b.String()
		}
		return string(raw)
	}
	return strings.Join(texts, "\n")
}
