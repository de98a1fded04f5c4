package agui

import (
	"encoding/json"
	"strconv"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/protocols/turnlog"
	"github.com/phaseflow/phaseflow/store"
)

// Run is what a stream needs to know of the run it translates.
type Run struct {
	ThreadID, RunID string
	MessageID       string          // the assistant message the run writes
	Messages        json.RawMessage // the client's messages as posted: the history snapshots show
	State           State           // the conversation's state as the run began
	Join            bool            // the client joins a run already under way
}

// Stream translates one message's event log into AG-UI events. It keeps what the
// translation needs between events (the attempt's open messages, the state as the client
// holds it), so one Stream serves one client's reading of one run, from the start of its
// log. Not safe for concurrent use.
type Stream struct {
	run       Run
	log       *turnlog.Reader
	started   bool
	reasoning string // the open reasoning message's id, "" when none is open
	text      string // the open text message's id
}

// NewStream returns the translation of run's log.
func NewStream(run Run) *Stream {
	if run.State.Artifacts == nil {
		run.State.Artifacts = map[string]any{}
	}
	return &Stream{run: run, log: turnlog.NewReader()}
}

// event is one AG-UI event; only the fields its type uses are set.
type event struct {
	Type         string          `json:"type"`
	ThreadID     string          `json:"threadId,omitempty"`
	RunID        string          `json:"runId,omitempty"`
	MessageID    string          `json:"messageId,omitempty"`
	Role         string          `json:"role,omitempty"`
	Delta        any             `json:"delta,omitempty"`
	Snapshot     any             `json:"snapshot,omitempty"`
	Messages     json.RawMessage `json:"messages,omitempty"`
	ToolCallID   string          `json:"toolCallId,omitempty"`
	ToolCallName string          `json:"toolCallName,omitempty"`
	ParentID     string          `json:"parentMessageId,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
	ActivityType string          `json:"activityType,omitempty"`
	Name         string          `json:"name,omitempty"`
	Value        any             `json:"value,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Outcome      *outcome        `json:"outcome,omitempty"`
	Message      string          `json:"message,omitempty"`
	Code         string          `json:"code,omitempty"`
}

// outcome is a finished run's outcome.
type outcome struct {
	Type string `json:"type"`
}

// Append appends the events ev becomes to dst as server-sent events. The first event is
// the run's start, with the state (and, for a client that joins, the messages) as
// snapshots; the terminal event ends the run.
func (s *Stream) Append(dst []byte, ev store.Event) []byte {
	var out []event
	if !s.started {
		s.started = true
		out = s.start()
	}
	happened, err := s.log.Read(ev)
	if err != nil {
		happened = []turnlog.Happening{{Kind: turnlog.Failed, Failed: &events.ErrorData{Code: failure.InternalError, Message: "the event log could not be read"}}}
	}
	for _, h := range happened {
		out = s.translate(out, h)
	}
	for _, e := range out {
		dst = appendData(dst, e)
	}
	return dst
}

// Heartbeat appends a comment, which keeps the connection open and which readers skip.
func (s *Stream) Heartbeat(dst []byte) []byte { return append(dst, ": heartbeat\n\n"...) }

// start is the run's opening.
func (s *Stream) start() []event {
	out := []event{{Type: "RUN_STARTED", ThreadID: s.run.ThreadID, RunID: s.run.RunID}}
	if s.run.Join {
		out = append(out, event{Type: "MESSAGES_SNAPSHOT", Messages: s.run.Messages})
	}
	return append(out, event{Type: "STATE_SNAPSHOT", Snapshot: s.run.State})
}

// appendData appends one event as a data: line.
func appendData(dst []byte, e event) []byte {
	b, err := events.Encode(e)
	if err != nil { // events are made of plain values and decoded JSON: they always encode
		b = []byte(`{"type":"RUN_ERROR","message":"an event could not be encoded","code":"internal_error"}`)
	}
	dst = append(dst, "data: "...)
	dst = append(dst, b...)
	return append(dst, "\n\n"...)
}

// translate appends the events of one happening.
func (s *Stream) translate(out []event, h turnlog.Happening) []event {
	switch h.Kind {
	case turnlog.Status:
		if h.Status.State == events.StatePhaseChanged {
			s.run.State.Phase = h.Status.To
			return append(out, event{Type: "STATE_DELTA", Delta: []Op{{Op: "replace", Path: "/phase", Value: h.Status.To}}})
		}
		return append(out, event{Type: "CUSTOM", Name: "phaseflow.status", Value: h.Status})
	case turnlog.Reasoning:
		if s.reasoning == "" {
			s.reasoning = s.reasoningID(h.Attempt)
			out = append(out, event{Type: "REASONING_START", MessageID: s.reasoning},
				event{Type: "REASONING_MESSAGE_START", MessageID: s.reasoning, Role: "reasoning"})
		}
		return append(out, event{Type: "REASONING_MESSAGE_CONTENT", MessageID: s.reasoning, Delta: h.Text})
	case turnlog.Answer:
		if s.text == "" {
			s.text = s.run.MessageID
			out = append(out, event{Type: "TEXT_MESSAGE_START", MessageID: s.text, Role: "assistant"})
		}
		return append(out, event{Type: "TEXT_MESSAGE_CONTENT", MessageID: s.text, Delta: h.Text})
	case turnlog.Refused:
		return s.refused(s.endMessages(out), h.Attempt)
	case turnlog.Completed:
		return s.completed(s.endMessages(out), h)
	case turnlog.Failed:
		return s.failed(s.endMessages(out), h)
	}
	return out
}

// reasoningID is the id of an attempt's reasoning message.
func (s *Stream) reasoningID(attempt int) string {
	return s.run.MessageID + "-reasoning-" + strconv.Itoa(attempt)
}

// endMessages ends the attempt's open messages.
func (s *Stream) endMessages(out []event) []event {
	if s.reasoning != "" {
		out = append(out, event{Type: "REASONING_MESSAGE_END", MessageID: s.reasoning},
			event{Type: "REASONING_END", MessageID: s.reasoning})
	}
	if s.text != "" {
		out = append(out, event{Type: "TEXT_MESSAGE_END", MessageID: s.text})
	}
	s.reasoning, s.text = "", ""
	return out
}

// refused takes the refused attempt's messages back: the client's messages become those it
// posted, and the next attempt's reasoning message, empty (a client keeps reasoning
// messages a snapshot leaves out unless the snapshot holds one).
func (s *Stream) refused(out []event, attempt int) []event {
	var msgs []json.RawMessage
	if err := json.Unmarshal(s.run.Messages, &msgs); err != nil {
		return out // checked when the run was posted; a snapshot without them would wipe them
	}
	next, err := json.Marshal(map[string]string{"id": s.reasoningID(attempt + 1), "role": "reasoning", "content": ""})
	if err != nil {
		return out
	}
	all, err := json.Marshal(append(msgs, next))
	if err != nil {
		return out
	}
	return append(out, event{Type: "MESSAGES_SNAPSHOT", Messages: all})
}

// completed appends the turn's state delta, cards and tool calls, then the run's end with
// the turn's metadata as its result.
func (s *Stream) completed(out []event, h turnlog.Happening) []event {
	md := h.Metadata
	if ops := s.patchOps(md.Phase, decodeObject(md.StatePatch)); len(ops) > 0 {
		out = append(out, event{Type: "STATE_DELTA", Delta: ops})
	}
	for i, card := range md.GenUI {
		out = append(out, event{Type: "ACTIVITY_SNAPSHOT", MessageID: s.run.MessageID + "-genui-" + strconv.Itoa(i),
			ActivityType: ActivityGenUI, Content: card})
	}
	out = s.toolCalls(out, md.ToolCalls)
	return append(out, event{Type: "RUN_FINISHED", ThreadID: s.run.ThreadID, RunID: s.run.RunID, Result: h.Completed.Metadata})
}

// patchOps are the operations of a state patch, which applies to the phase's block of the
// artifacts; they are applied to the state the client holds.
func (s *Stream) patchOps(phase string, patch map[string]any) []Op {
	if len(patch) == 0 || phase == "" {
		return nil
	}
	at := "/artifacts/" + pointerEscape(phase)
	block, ok := s.run.State.Artifacts[phase].(map[string]any)
	if !ok {
		block = map[string]any{}
		s.run.State.Artifacts[phase] = block
		return []Op{{Op: "add", Path: at, Value: mergeInto(block, patch)}}
	}
	return mergeOps(block, patch, at)
}

// ActivityGenUI is the activity type of a GenUI card; the activity's content is the card.
const ActivityGenUI = "phaseflow.genui"

// failed appends the MCP calls made, the short reply the server wrote instead, and the
// run's error; a cancelled turn finishes with the cancelled outcome.
func (s *Stream) failed(out []event, h turnlog.Happening) []event {
	e := h.Failed
	out = s.toolCalls(out, e.ToolCalls)
	if h.FallbackAnswer != "" {
		id := s.run.MessageID + "-fallback"
		out = append(out, event{Type: "TEXT_MESSAGE_START", MessageID: id, Role: "assistant"},
			event{Type: "TEXT_MESSAGE_CONTENT", MessageID: id, Delta: h.FallbackAnswer},
			event{Type: "TEXT_MESSAGE_END", MessageID: id})
	}
	if e.Code == failure.Cancelled {
		return append(out, event{Type: "RUN_FINISHED", ThreadID: s.run.ThreadID, RunID: s.run.RunID, Outcome: &outcome{Type: "cancelled"}})
	}
	return append(out, event{Type: "RUN_ERROR", Message: e.Message, Code: e.Code})
}

// toolCalls appends each MCP call as a tool call of the reply, with its result.
func (s *Stream) toolCalls(out []event, calls []store.ToolCall) []event {
	for i, c := range calls {
		id := s.run.MessageID + "-tool-" + strconv.Itoa(i)
		args := string(c.Arguments)
		if args == "" || args == "null" {
			args = "{}"
		}
		text := c.Output
		if c.Status == store.ToolFailure {
			text = c.Error
		}
		result, err := json.Marshal(text)
		if err != nil { // a string always encodes
			result = []byte(`""`)
		}
		out = append(out, event{Type: "TOOL_CALL_START", ToolCallID: id, ToolCallName: c.ServerLabel + "." + c.Name, ParentID: s.run.MessageID},
			event{Type: "TOOL_CALL_ARGS", ToolCallID: id, Delta: args},
			event{Type: "TOOL_CALL_END", ToolCallID: id},
			event{Type: "TOOL_CALL_RESULT", MessageID: id + "-result", ToolCallID: id, Content: result, Role: "tool"})
	}
	return out
}
