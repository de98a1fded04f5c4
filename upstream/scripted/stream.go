package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// eventWriter writes Responses stream events: `event:` and `data:` lines with the type and
// a rising sequence_number first in the JSON, as the real API does, and a flush after each.
type eventWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	seq int
}

// send writes one event of type typ whose other fields are payload's (a struct marshalling
// to a JSON object). A write or flush error means the client is gone.
func (e *eventWriter) send(typ string, payload any) error {
	// Like the real API, write <, > and & as themselves: replies are full of tags, and
	// json.Marshal would turn each into a \u003c escape.
	var enc bytes.Buffer
	je := json.NewEncoder(&enc)
	je.SetEscapeHTML(false)
	if err := je.Encode(payload); err != nil {
		return fmt.Errorf("encode %s: %w", typ, err)
	}
	body := bytes.TrimSuffix(enc.Bytes(), []byte("\n"))
	var b bytes.Buffer
	b.WriteString("event: ")
	b.WriteString(typ)
	b.WriteString("\ndata: {\"type\":")
	q, _ := json.Marshal(typ)
	b.Write(q)
	b.WriteString(`,"sequence_number":`)
	b.WriteString(strconv.Itoa(e.seq))
	if len(body) > 2 { // not "{}"
		b.WriteByte(',')
		b.Write(body[1:])
	} else {
		b.WriteByte('}')
	}
	b.WriteString("\n\n")
	e.seq++
	if _, err := e.w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", typ, err)
	}
	if err := e.rc.Flush(); err != nil {
		return fmt.Errorf("flush %s: %w", typ, err)
	}
	return nil
}

// Wire shapes of the events the scripted upstream sends (docs/upstreams.md).
type (
	wireResponse struct {
		ID        string     `json:"id"`
		Object    string     `json:"object"`
		CreatedAt int64      `json:"created_at"`
		Status    string     `json:"status"`
		Model     string     `json:"model"`
		Output    []any      `json:"output"`
		Usage     *wireUsage `json:"usage"`
	}
	wireUsage struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
	messageItem struct {
		ID      string     `json:"id"`
		Type    string     `json:"type"`
		Status  string     `json:"status"`
		Role    string     `json:"role"`
		Content []textPart `json:"content"`
	}
	textPart struct {
		Type        string            `json:"type"`
		Text        string            `json:"text"`
		Annotations []json.RawMessage `json:"annotations"`
	}
	responseEvent struct {
		Response wireResponse `json:"response"`
	}
	// itemEvent is output_item.added or .done; Item is a messageItem, mcpListItem or
	// mcpCallItem.
	itemEvent struct {
		OutputIndex int `json:"output_index"`
		Item        any `json:"item"`
	}
	partEvent struct {
		ItemID       string   `json:"item_id"`
		OutputIndex  int      `json:"output_index"`
		ContentIndex int      `json:"content_index"`
		Part         textPart `json:"part"`
	}
	deltaEvent struct {
		ItemID       string            `json:"item_id"`
		OutputIndex  int               `json:"output_index"`
		ContentIndex int               `json:"content_index"`
		Delta        string            `json:"delta"`
		Logprobs     []json.RawMessage `json:"logprobs"`
	}
	textDoneEvent struct {
		ItemID       string            `json:"item_id"`
		OutputIndex  int               `json:"output_index"`
		ContentIndex int               `json:"content_index"`
		Text         string            `json:"text"`
		Logprobs     []json.RawMessage `json:"logprobs"`
	}
	errorEvent struct {
		Error apiError `json:"error"`
	}
	apiError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	}
)

// newTextPart returns an output_text part; annotations is [] rather than null, as upstream.
func newTextPart(text string) textPart {
	return textPart{Type: "output_text", Text: text, Annotations: []json.RawMessage{}}
}

// ending is how a scripted stream ends after its cut point.
type ending int

const (
	endComplete    ending = iota // all deltas, then response.completed
	endError                     // an error event (nested shape)
	endStall                     // nothing more until the client leaves
	endAbruptClose               // the connection drops without a terminal event
)

// String names the ending for logs.
func (e ending) String() string {
	switch e {
	case endError:
		return "mid_stream_error"
	case endStall:
		return "stall"
	case endAbruptClose:
		return "abrupt_close"
	}
	return "complete"
}

// plan is one scripted response, decided before the first byte is written: the MCP calls,
// then the message holding text.
type plan struct {
	respID, msgID string
	calls         []toolCall
	model         string
	createdAt     int64
	text          string
	chunkSize     int
	pace          time.Duration
	firstToken    time.Duration
	ending        ending
	inputTokens   int
}

// run streams p. It returns when the response is written, the client is gone (ctx), or a
// write fails; endAbruptClose panics with http.ErrAbortHandler, net/http's way of dropping
// the connection without the chunked terminator.
func (p *plan) run(ctx context.Context, ew *eventWriter) error {
	resp := wireResponse{ID: p.respID, Object: "response", CreatedAt: p.createdAt, Status: "in_progress", Model: p.model, Output: []any{}}
	if err := ew.send("response.created", responseEvent{resp}); err != nil {
		return err
	}
	if err := ew.send("response.in_progress", responseEvent{resp}); err != nil {
		return err
	}
	done, err := p.runTools(ctx, ew)
	if err != nil {
		return err
	}
	msg := message{index: len(done), item: messageItem{ID: p.msgID, Type: "message", Status: "in_progress", Role: "assistant", Content: []textPart{}}}
	if err := msg.open(ew); err != nil {
		return err
	}
	err = p.sendText(ctx, func(piece string) error {
		return ew.send("response.output_text.delta", deltaEvent{ItemID: p.msgID, OutputIndex: msg.index, Delta: piece, Logprobs: []json.RawMessage{}})
	})
	if err != nil {
		return err
	}
	switch p.ending {
	case endError:
		return ew.send("error", errorEvent{Error: apiError{
			Type: "server_error", Code: "server_error",
			Message: "The scripted upstream failed in the middle of the stream ([[fault:mid_stream_error]]).",
		}})
	case endStall:
		<-ctx.Done()
		return ctx.Err()
	case endAbruptClose:
		panic(http.ErrAbortHandler)
	}
	return p.close(ew, resp, msg, done)
}

// sendText sends the reply's text through send in pieces at p's pace (the first after
// firstToken); a reply that will not complete stops after a third of them.
func (p *plan) sendText(ctx context.Context, send func(piece string) error) error {
	pieces := chunks(p.text, p.chunkSize)
	if p.ending != endComplete {
		pieces = pieces[:min(len(pieces), max(1, len(pieces)/3))]
	}
	for i, piece := range pieces {
		wait := p.pace
		if i == 0 {
			wait = p.firstToken
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		if err := send(piece); err != nil {
			return err
		}
	}
	return nil
}

// message is the message item of a response and its output_index.
type message struct {
	index int
	item  messageItem
}

// open sends the events that start the message, before its first delta.
func (m message) open(ew *eventWriter) error {
	if err := ew.send("response.output_item.added", itemEvent{OutputIndex: m.index, Item: m.item}); err != nil {
		return err
	}
	return ew.send("response.content_part.added", partEvent{ItemID: m.item.ID, OutputIndex: m.index, Part: newTextPart("")})
}

// close sends the events after the last delta, ending with response.completed, whose
// output lists the tool items done before the message, then the message.
func (p *plan) close(ew *eventWriter, resp wireResponse, msg message, done []any) error {
	part := newTextPart(p.text)
	if err := ew.send("response.output_text.done", textDoneEvent{ItemID: p.msgID, OutputIndex: msg.index, Text: p.text, Logprobs: []json.RawMessage{}}); err != nil {
		return err
	}
	if err := ew.send("response.content_part.done", partEvent{ItemID: p.msgID, OutputIndex: msg.index, Part: part}); err != nil {
		return err
	}
	item := msg.item
	item.Status, item.Content = "completed", []textPart{part}
	if err := ew.send("response.output_item.done", itemEvent{OutputIndex: msg.index, Item: item}); err != nil {
		return err
	}
	out := estimateTokens(p.text)
	resp.Status, resp.Output = "completed", append(done, item)
	resp.Usage = &wireUsage{InputTokens: p.inputTokens, OutputTokens: out, TotalTokens: p.inputTokens + out}
	return ew.send("response.completed", responseEvent{resp})
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
