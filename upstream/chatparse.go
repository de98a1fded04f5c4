package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// errStopped means the consumer stopped iterating; nothing more is yielded.
var errStopped = errors.New("upstream: consumer stopped")

// maxToolArguments bounds the arguments of one streamed tool call.
const maxToolArguments = 1 << 20

// chatChunk is the union of what one Chat Completions stream chunk can hold: a
// chat.completion.chunk, the usage chunk, or an error in one of the shapes of
// docs/upstreams.md (a top-level "error", or vLLM's {"object":"error",…}). Reasoning
// fields (reasoning, reasoning_content, reasoning_details) are not decoded, so they never
// reach the reply; a refusal is kept apart from it.
type chatChunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Model   string          `json:"model"`
	Choices []chatChoice    `json:"choices"`
	Usage   *chatUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// chatChoice is one choice of a chunk; only index 0 is read.
type chatChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	FinishReason string    `json:"finish_reason"`
}

// chatDelta is the new part of the message (a non-streamed answer's message reads the
// same).
type chatDelta struct {
	Content   chatContent     `json:"content"`
	Refusal   string          `json:"refusal"`
	ToolCalls []toolCallDelta `json:"tool_calls"`
}

// maxRefusal bounds the refusal text kept: enough for any model's apology.
const maxRefusal = 4 << 10

// chatContent is a delta's content: a string, or (Mistral's reasoning models) a list of
// typed parts, of which only the text parts are the reply; thinking parts never reach it.
type chatContent string

// UnmarshalJSON reads a string, null, or a list of parts.
func (c *chatContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		*c = ""
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("content: %w", err)
		}
		*c = chatContent(s)
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return fmt.Errorf("content: neither a string nor a list of parts: %w", err)
	}
	var text strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			text.WriteString(p.Text)
		}
	}
	*c = chatContent(text.String())
	return nil
}

// toolCallDelta is one fragment of a streamed tool call. Arguments is usually a string
// fragment; some servers send the whole object at once, which is accepted too.
type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// chatUsage is the usage chunk's token accounting.
type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// pendingCall is a tool call being assembled from its fragments.
type pendingCall struct {
	id, name string
	args     strings.Builder
}

// arguments returns the call's arguments, "{}" when the model sent none.
func (p *pendingCall) arguments() string {
	if strings.TrimSpace(p.args.String()) == "" {
		return "{}"
	}
	return p.args.String()
}

// chatRound is what one streamed round produced.
type chatRound struct {
	id, model string
	finish    string
	content   strings.Builder
	refusal   strings.Builder
	calls     []*pendingCall
	byIndex   map[int]*pendingCall
	usage     *chatUsage
}

// readChatRound decodes one round's stream, yielding EventCreated (first round only) and
// the text deltas through turn. It ends at data: [DONE], or at EOF after a finish reason;
// EOF with neither is a failure, as is a finish reason saying the reply was cut.
func readChatRound(r io.Reader, turn *chatTurn) (*chatRound, error) {
	dec := newDecoder(r)
	rd := &chatRound{byIndex: map[int]*pendingCall{}}
	for {
		f, err := dec.next()
		if errors.Is(err, io.EOF) {
			if rd.finish == "" {
				return nil, &Error{Kind: KindProvider, Message: ErrNoTerminal.Error(), err: ErrNoTerminal}
			}
			return rd, rd.finishError()
		}
		if err != nil {
			return nil, readError(err)
		}
		if bytes.Equal(bytes.TrimSpace(f.data), []byte("[DONE]")) {
			return rd, rd.finishError()
		}
		if err := rd.apply(f.data, turn); err != nil {
			return nil, err
		}
	}
}

// apply reads one chunk into rd.
func (rd *chatRound) apply(data []byte, turn *chatTurn) error {
	var ch chatChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return &Error{Kind: KindProvider, Message: "malformed stream chunk " + truncate(string(data), 200), err: err}
	}
	if err := chunkError(&ch); err != nil {
		return err
	}
	rd.id, rd.model = firstNonEmpty(rd.id, ch.ID), firstNonEmpty(rd.model, ch.Model)
	// The upstream is announced by the first chunk that names its model (Azure's model
	// router opens with a chunk that names none), or else by the first that carries the
	// reply, which must not go out before it.
	if (ch.Model != "" || carriesReply(&ch)) && !turn.announce(rd.id, rd.model) {
		return errStopped
	}
	if ch.Usage != nil {
		rd.usage = ch.Usage
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue
		}
		if text := string(c.Delta.Content); text != "" {
			rd.content.WriteString(text)
			if !turn.yield(Event{Kind: EventTextDelta, Delta: text}, nil) {
				return errStopped
			}
		}
		if r := c.Delta.Refusal; r != "" && rd.refusal.Len() < maxRefusal {
			rd.refusal.WriteString(r[:min(len(r), maxRefusal-rd.refusal.Len())])
		}
		for i, d := range c.Delta.ToolCalls {
			if err := rd.addFragment(i, d); err != nil {
				return err
			}
		}
		if c.FinishReason != "" {
			rd.finish = c.FinishReason
		}
	}
	return nil
}

// addFragment appends one tool-call fragment. Fragments are grouped by index; a fragment
// whose id differs from the call at its index starts a new call, because Ollama sends
// parallel calls all at index 0 (docs/upstreams.md).
func (rd *chatRound) addFragment(pos int, d toolCallDelta) error {
	idx := pos
	if d.Index != nil {
		idx = *d.Index
	}
	cur := rd.byIndex[idx]
	if cur == nil || (d.ID != "" && cur.id != "" && d.ID != cur.id) {
		cur = &pendingCall{}
		rd.byIndex[idx] = cur
		rd.calls = append(rd.calls, cur)
	}
	if cur.id == "" {
		cur.id = d.ID
	}
	if cur.name == "" {
		cur.name = d.Function.Name
	}
	args := argumentsText(d.Function.Arguments)
	if cur.args.Len()+len(args) > maxToolArguments {
		return &Error{Kind: KindProvider, Message: "tool call arguments too large"}
	}
	cur.args.WriteString(args)
	return nil
}

// argumentsText is a fragment of arguments: the string's text, or an object as JSON.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] == '"' {
		return rawString(raw)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// finishError is the failure the end of a round stands for: the model refused (a refusal
// instead of an answer, as strict structured outputs send it), the output limit cut the
// reply (length), or a filter did (content_filter), as on the Responses wire.
func (rd *chatRound) finishError() error {
	switch {
	case rd.refusal.Len() > 0:
		return &Error{Kind: KindRefused, UpstreamCode: "refusal", Message: rd.refusal.String()}
	case rd.finish == "length":
		return &Error{Kind: KindTruncated, UpstreamCode: "length", Message: "response incomplete: length"}
	case rd.finish == "content_filter":
		return &Error{Kind: KindProvider, UpstreamCode: "content_filter", Message: "response incomplete: content_filter"}
	}
	return nil
}

// carriesReply reports a chunk with something of the reply: text, a tool call or the end.
func carriesReply(ch *chatChunk) bool {
	for _, c := range ch.Choices {
		if c.Index == 0 && (c.Delta.Content != "" || len(c.Delta.ToolCalls) > 0 || c.FinishReason != "") {
			return true
		}
	}
	return false
}

// chunkError returns the failure a chunk reports, nil for a normal chunk. OpenRouter sends
// {"error":{"code":502,"message":…}} after HTTP 200, often with an HTTP-like numeric code,
// which is mapped like the HTTP status it stands for, so a provider that is down or
// rate-limited before the first token can be failed over.
func chunkError(ch *chatChunk) error {
	raw := bytes.TrimSpace(ch.Error)
	hasError := len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
	if !hasError && ch.Object != "error" {
		return nil
	}
	e := &Error{Kind: KindProvider}
	var nested wireError
	switch {
	case hasError && raw[0] == '{' && json.Unmarshal(raw, &nested) == nil:
		e.UpstreamCode, e.Message = firstNonEmpty(rawString(nested.Code), nested.Type), nested.Message
	case hasError:
		e.Message = rawString(raw)
	default: // vLLM: {"object":"error","message","type","code"}
		e.UpstreamCode, e.Message = firstNonEmpty(rawString(ch.Code), ch.Type), ch.Message
	}
	e.Kind = codeKind(e.UpstreamCode)
	e.Message = firstNonEmpty(e.Message, "upstream sent an error chunk")
	return e
}
