package aisdk

import (
	"encoding/json"
	"strconv"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/protocols/turnlog"
	"github.com/phaseflow/phaseflow/store"
)

// Header is the header that names the UI message stream and its value.
const (
	Header        = "X-Vercel-Ai-Ui-Message-Stream"
	HeaderVersion = "v1"
)

// Stream translates one message's event log into the UI message stream. It keeps what the
// translation needs between events (the attempt's open parts), so one Stream serves one
// client's reading of one message, from the start of its log; the events up to skip
// (a client's Last-Event-ID) are read but not sent. Not safe for concurrent use.
type Stream struct {
	messageID string
	skip      int64
	log       *turnlog.Reader
	started   bool
	reasoning string // the open reasoning part's id, "" when none is open
	text      string // the open text part's id
}

// NewStream returns the translation of messageID's log for a client that saw its events up
// to skip (0: none).
func NewStream(messageID string, skip int64) *Stream {
	return &Stream{messageID: messageID, skip: skip, log: turnlog.NewReader()}
}

// chunk is one part of the UI message stream; only the fields its type uses are set.
type chunk struct {
	Type             string          `json:"type"`
	ID               string          `json:"id,omitempty"`
	MessageID        string          `json:"messageId,omitempty"`
	Delta            string          `json:"delta,omitempty"`
	Data             any             `json:"data,omitempty"`
	ProviderMetadata *providerMeta   `json:"providerMetadata,omitempty"`
	ToolCallID       string          `json:"toolCallId,omitempty"`
	ToolName         string          `json:"toolName,omitempty"`
	Input            json.RawMessage `json:"input,omitempty"`
	Output           any             `json:"output,omitempty"`
	Dynamic          bool            `json:"dynamic,omitempty"`
	ErrorText        string          `json:"errorText,omitempty"`
	FinishReason     string          `json:"finishReason,omitempty"`
	MessageMetadata  json.RawMessage `json:"messageMetadata,omitempty"`
	Reason           string          `json:"reason,omitempty"`
}

// providerMeta is a part's providerMetadata: Phaseflow's marks under "phaseflow".
type providerMeta struct {
	Phaseflow partMark `json:"phaseflow"`
}

// partMark says what became of a part: the attempt it belongs to was refused (its text is
// not the reply), or it is the short reply the server wrote when the turn failed.
type partMark struct {
	Discarded bool `json:"discarded,omitempty"`
	Fallback  bool `json:"fallback,omitempty"`
	Attempt   int  `json:"attempt,omitempty"`
}

// Append appends ev's chunks to dst as server-sent events; the last one carries ev's id,
// so a client that sends Last-Event-ID resumes after it. The terminal event ends the stream
// with [DONE].
func (s *Stream) Append(dst []byte, ev store.Event) []byte {
	happened, err := s.log.Read(ev)
	if err != nil {
		happened = []turnlog.Happening{{Kind: turnlog.Failed, Failed: &events.ErrorData{Message: "the event log could not be read"}}}
	}
	var chunks []chunk
	if !s.started {
		s.started = true
		chunks = append(chunks, chunk{Type: "start", MessageID: s.messageID})
	}
	for _, h := range happened {
		chunks = s.translate(chunks, h)
	}
	if ev.Seq <= s.skip {
		return dst
	}
	for i, c := range chunks {
		id := int64(0)
		if i == len(chunks)-1 {
			id = ev.Seq
		}
		dst = appendData(dst, c, id)
	}
	if events.IsTerminal(ev.Name) {
		dst = append(dst, "data: [DONE]\n\n"...)
	}
	return dst
}

// Heartbeat appends a comment, which keeps the connection open and which readers skip.
func (s *Stream) Heartbeat(dst []byte) []byte { return append(dst, ": heartbeat\n\n"...) }

// appendData appends one chunk as a data: line, with an id: line when id is set.
func appendData(dst []byte, c chunk, id int64) []byte {
	b, err := events.Encode(c)
	if err != nil { // a chunk is made of plain values and decoded JSON: it always encodes
		b = []byte(`{"type":"error","errorText":"a part could not be encoded"}`)
	}
	dst = append(dst, "data: "...)
	dst = append(dst, b...)
	if id > 0 {
		dst = append(dst, "\nid: "...)
		dst = strconv.AppendInt(dst, id, 10)
	}
	return append(dst, "\n\n"...)
}

// translate appends the chunks of one happening.
func (s *Stream) translate(out []chunk, h turnlog.Happening) []chunk {
	switch h.Kind {
	case turnlog.Status:
		return append(out, chunk{Type: dataStatus, ID: "status", Data: h.Status})
	case turnlog.Reasoning:
		if s.reasoning == "" {
			s.reasoning = "reasoning-" + strconv.Itoa(h.Attempt)
			out = append(out, chunk{Type: "reasoning-start", ID: s.reasoning})
		}
		return append(out, chunk{Type: "reasoning-delta", ID: s.reasoning, Delta: h.Text})
	case turnlog.Answer:
		if s.text == "" {
			s.text = "text-" + strconv.Itoa(h.Attempt)
			out = append(out, chunk{Type: "text-start", ID: s.text})
		}
		return append(out, chunk{Type: "text-delta", ID: s.text, Delta: h.Text})
	case turnlog.Refused:
		return s.endParts(out, &providerMeta{Phaseflow: partMark{Discarded: true, Attempt: h.Attempt}})
	case turnlog.Completed:
		return s.completed(s.endParts(out, nil), h)
	case turnlog.Failed:
		return s.failed(s.endParts(out, nil), h)
	}
	return out
}

// endParts ends the attempt's open parts with mark.
func (s *Stream) endParts(out []chunk, mark *providerMeta) []chunk {
	if s.reasoning != "" {
		out = append(out, chunk{Type: "reasoning-end", ID: s.reasoning, ProviderMetadata: mark})
	}
	if s.text != "" {
		out = append(out, chunk{Type: "text-end", ID: s.text, ProviderMetadata: mark})
	}
	s.reasoning, s.text = "", ""
	return out
}

// completed appends the turn's cards, state, tool calls and finish.
func (s *Stream) completed(out []chunk, h turnlog.Happening) []chunk {
	md := h.Metadata
	out = append(out, cards(md)...)
	out = append(out, toolParts(s.messageID, md.ToolCalls)...)
	return append(out, chunk{Type: "finish", FinishReason: "stop", MessageMetadata: h.Completed.Metadata})
}

// failed appends the short reply the server wrote instead, if any, then the error (or the
// abort of a cancelled turn).
func (s *Stream) failed(out []chunk, h turnlog.Happening) []chunk {
	e := h.Failed
	out = append(out, toolParts(s.messageID, e.ToolCalls)...)
	if h.FallbackAnswer != "" {
		mark := &providerMeta{Phaseflow: partMark{Fallback: true}}
		out = append(out, chunk{Type: "text-start", ID: "fallback", ProviderMetadata: mark},
			chunk{Type: "text-delta", ID: "fallback", Delta: h.FallbackAnswer},
			chunk{Type: "text-end", ID: "fallback", ProviderMetadata: mark})
	}
	if e.Code == failure.Cancelled {
		return append(out, chunk{Type: "abort", Reason: e.Message})
	}
	return append(out, chunk{Type: "error", ErrorText: e.Message})
}
