package upstream

import (
	"encoding/json"
	"fmt"
	"io"
)

// maxWholeAnswer bounds a whole JSON answer read at once: far past any reply the
// orchestrator keeps, short of what would hurt the server.
const maxWholeAnswer = 16 << 20

// readWhole decodes a whole JSON answer from r into v, refusing one past maxWholeAnswer.
func readWhole(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, maxWholeAnswer+1))
	if err != nil {
		return readError(err)
	}
	if len(b) > maxWholeAnswer {
		return &Error{Kind: KindProvider, Message: fmt.Sprintf("a whole JSON answer larger than %d bytes", maxWholeAnswer)}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &Error{Kind: KindProvider, Message: "malformed JSON answer " + truncate(string(b), 200), err: err}
	}
	return nil
}

// wholeResponse is a Responses answer that came whole: the response object, with its
// output items.
type wholeResponse struct {
	wireResponse
	Output []struct {
		Type    string `json:"type"`
		Content []struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Refusal string `json:"refusal"`
		} `json:"content"`
	} `json:"output"`
}

// readWholeResponse reads a Responses answer that came whole (a gateway that ignored
// "stream": true) and yields what its stream would have: created, the text, then the
// completion, or the failure its status stands for.
func readWholeResponse(r io.Reader, requestID string, yield func(Event, error) bool) error {
	var w wholeResponse
	if err := readWhole(r, &w); err != nil {
		return err
	}
	if !yield(Event{Kind: EventCreated, ResponseID: w.ID, Model: w.Model, UpstreamRequestID: requestID}, nil) {
		return errStopped
	}
	st := &streamState{}
	for _, item := range w.Output {
		for _, part := range item.Content {
			switch {
			case item.Type == "message" && part.Type == "output_text" && part.Text != "":
				if !yield(Event{Kind: EventTextDelta, Delta: part.Text}, nil) {
					return errStopped
				}
			case part.Type == "refusal":
				st.addRefusal(part.Refusal)
			}
		}
	}
	switch w.Status {
	case "failed":
		return streamError("response.failed", &wireEvent{Response: &w.wireResponse})
	case "incomplete":
		return streamError("response.incomplete", &wireEvent{Response: &w.wireResponse})
	}
	ev, err := st.end(completed(&w.wireResponse))
	if err != nil {
		return err
	}
	if !yield(ev, nil) {
		return errStopped
	}
	return nil
}

// wholeChat is a Chat Completions answer that came whole: a chat.completion, or an error
// object sent with HTTP 200.
type wholeChat struct {
	chatChunk
	Choices []struct {
		Index        int       `json:"index"`
		Message      chatDelta `json:"message"`
		FinishReason string    `json:"finish_reason"`
	} `json:"choices"`
}

// readWholeChat reads a Chat Completions answer that came whole (a gateway that ignored
// "stream": true) as one round: its text as one delta, its refusal, tool calls, finish
// reason and usage.
func readWholeChat(r io.Reader, turn *chatTurn) (*chatRound, error) {
	var w wholeChat
	if err := readWhole(r, &w); err != nil {
		return nil, err
	}
	if err := chunkError(&w.chatChunk); err != nil {
		return nil, err
	}
	rd := &chatRound{byIndex: map[int]*pendingCall{}, id: w.ID, model: w.Model, usage: w.Usage}
	if !turn.announce(rd.id, rd.model) {
		return nil, errStopped
	}
	for _, c := range w.Choices {
		if c.Index != 0 {
			continue
		}
		if text := string(c.Message.Content); text != "" {
			rd.content.WriteString(text)
			if !turn.yield(Event{Kind: EventTextDelta, Delta: text}, nil) {
				return nil, errStopped
			}
		}
		rd.refusal.WriteString(c.Message.Refusal[:min(len(c.Message.Refusal), maxRefusal)])
		for i, d := range c.Message.ToolCalls {
			if err := rd.addFragment(i, d); err != nil {
				return nil, err
			}
		}
		rd.finish = c.FinishReason
	}
	if rd.finish == "" && rd.refusal.Len() == 0 && rd.content.Len() == 0 && len(rd.calls) == 0 {
		return nil, &Error{Kind: KindProvider, Message: "a whole JSON answer with no choice"}
	}
	return rd, rd.finishError()
}
