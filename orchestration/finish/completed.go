package finish

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// Tail is what ends a turn, for the orchestrator to hand to the event log in this order:
// the move's settlement (its own transaction, since phase_changed reports the move before
// the terminal event), phase_changed, then the terminal event, which commits with Message.
type Tail struct {
	// Move is a phase move's settlement (the session and strategy after the turn, and the
	// transition row), nil when the turn moved no phase.
	Move *store.Settlement
	// PhaseChange, when set, is announced with status phase_changed before the end.
	PhaseChange *events.PhaseChange
	// Name and Data are the terminal event: events.Completed or events.Error.
	Name string
	Data any
	// Message is the message's final row: status, text, results, error and metadata, its
	// Records (the MCP calls, the unrecorded traces) and, for a completed turn that moved
	// no phase, its Settlement.
	Message *store.Message
	// Code is the error code of a failed turn, "" for a completed one.
	Code string
	// IgnoredMove is why a move the handler asked for was left out (the graph forbids it),
	// for the log; nil otherwise.
	IgnoredMove error
}

// Turn is what every tail is built from: the turn as it began and where the upstream
// answered. (The requests it sent upstream are the event log's to record: see
// eventlog.Writer.Trace.)
type Turn struct {
	Begun    *session.Begun
	UserText string
	// Owner is this replica, whose settlement fences the write.
	Owner string
	// Route is the routed endpoint (or the configured primary, when none answered).
	Route events.Route
}

// Completion is a completed turn's judgement: its plan, its attempts, the settled reply,
// and the handlers a move enters the new phase with.
type Completion struct {
	Plan     *prompt.Plan
	Outcome  stream.Outcome
	Settled  postprocess.Settlement
	Handlers Handlers
	// At is when the move, if any, happens (the carryover block is stamped with it).
	At time.Time
}

// Completed is the tail of a turn whose reply stands: the settlement (the session with its
// phase's block, the strategy the reply recorded, the server's title, the move and its
// carryover when the verdict asks for one), then the message's final row and the completed
// event. A move the graph forbids is left out (the verdict's NextPhase is not a neighbour).
func Completed(t Turn, c Completion) (Tail, error) {
	meta := c.Settled.Metadata
	meta.RuntimePolicy = &c.Plan.Policy
	sd, err := settle(t, c, &meta)
	if err != nil {
		return Tail{}, err
	}
	st, change := sd.settlement, sd.change
	meta.PhaseChange = change
	res := c.Outcome.Result
	msg, err := completedMessage(t, res, meta)
	if err != nil {
		return Tail{}, err
	}
	tail := Tail{PhaseChange: change, Name: events.Completed, Message: msg, IgnoredMove: sd.ignored}
	if st.Move != nil {
		tail.Move = st
	} else {
		msg.Settlement = st
	}
	tail.Data = &events.CompletedData{Route: finalRoute(t.Route, res), ReplyLen: utf8.RuneCountInString(res.Text), Metadata: json.RawMessage(msg.Metadata)}
	return tail, nil
}

// completedMessage is the final row of a completed turn.
func completedMessage(t Turn, res stream.Result, meta events.Metadata) (*store.Message, error) {
	msg := result(t, store.StatusCompleted, res.Text)
	msg.Records = records(meta.ToolCalls)
	msg.ResponseID, msg.StatePatch = res.ResponseID, store.JSON(meta.StatePatch)
	var err error
	for _, col := range []struct {
		dst *store.JSON
		v   any
	}{{&msg.ToolCalls, meta.ToolCalls}, {&msg.GenUI, meta.GenUI}, {&msg.Validation, meta.Validation}, {&msg.Usage, meta.Usage}} {
		if *col.dst, err = jsonOrNull(col.v); err != nil {
			return nil, err
		}
	}
	if msg.Metadata, err = events.Encode(meta); err != nil {
		return nil, fmt.Errorf("finish: completed metadata: %w", err)
	}
	return msg, nil
}

// settled is what settle makes: the settlement, the move's announcement, or why the move
// the verdict asked for was left out.
type settled struct {
	settlement *store.Settlement
	change     *events.PhaseChange
	ignored    error
}

// settle is the session and strategy after the turn, with its move when the verdict asks
// for one.
func settle(t Turn, c Completion, meta *events.Metadata) (settled, error) {
	b, plan, s := t.Begun, c.Plan, c.Settled
	arts, err := plan.Artifacts()
	if err != nil {
		return settled{}, err
	}
	arts[string(plan.Phase)] = s.Block
	state := b.Metadata
	sess := *b.Session
	sess.PreviousResponseID = c.Outcome.Result.ResponseID
	st := &store.Settlement{MessageID: b.Assistant.ID, Owner: t.Owner, Session: &sess}
	name := plan.StrategyName
	if rec := s.Strategy; rec != nil {
		state.StrategyID = rec.ID
		if st.Strategy, err = strategyRow(rec, b.Assistant.UserID, sess.ID); err != nil {
			return settled{}, err
		}
		if rec.Name != "" {
			name = rec.Name
		}
	}
	if title, ok := session.AutoTitle(sess.Title, &state, name, t.UserText, sess.Locale); ok {
		sess.Title, meta.SessionTitle = title, title
	}
	var change *events.PhaseChange
	ignored := phases.CheckMove(plan.Phase, s.Report.NextPhase)
	if s.Move && ignored == nil {
		if st.Move, err = turnMove(t, c, meta).Apply(plan.Skills, c.Handlers, &sess, arts, &state, c.At); err != nil {
			return settled{}, err
		}
		change = &events.PhaseChange{From: string(plan.Phase), To: string(s.Report.NextPhase), Reason: st.Move.Reason}
	}
	if !s.Move {
		ignored = nil
	}
	return settled{st, change, ignored}, EncodeState(&sess, arts, state)
}

// turnMove is the move a turn's verdict asks for, with its evidence and last exchanges.
func turnMove(t Turn, c Completion, meta *events.Metadata) Move {
	r, plan := c.Settled.Report, c.Plan
	evidence := map[string]any{"fields": r.Evidence}
	if len(meta.ToolCalls) > 0 {
		evidence["tool_calls"] = toolNames(meta.ToolCalls)
	}
	exchanges := append(append([]store.Message{}, plan.History...),
		store.Message{Role: store.RoleUser, Content: t.UserText}, store.Message{Role: store.RoleAssistant, Content: c.Outcome.Result.Text})
	return Move{From: plan.Phase, To: r.NextPhase, Reason: r.Reason, ReasonSkill: r.ReasonSkill,
		MessageID: t.Begun.Assistant.ID, Evidence: evidence, Exchanges: exchanges}
}

// strategyRow is a recorded strategy as its table row.
func strategyRow(rec *handlers.StrategyRecord, userID, sessionID string) (*store.Strategy, error) {
	row := &store.Strategy{
		ID: rec.ID, UserID: userID, SessionID: sessionID, Name: rec.Name,
		Status: rec.Status, BacktestStatus: rec.BacktestStatus,
	}
	if rec.Spec != nil {
		spec, err := json.Marshal(rec.Spec)
		if err != nil {
			return nil, fmt.Errorf("finish: strategy %s spec: %w", rec.ID, err)
		}
		row.Spec = spec
	}
	return row, nil
}

func toolNames(calls []store.ToolCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.ServerLabel + "/" + c.Name + ":" + string(c.Status)
	}
	return out
}

// records are what the terminal event writes besides the message's columns: one row per
// MCP call (the store adds the message, session and outcome; the event log adds the
// traces it has not written yet).
func records(calls []store.ToolCall) *store.TurnRecords {
	r := &store.TurnRecords{}
	for _, c := range calls {
		r.Calls = append(r.Calls, store.MCPCall{ToolCall: c})
	}
	return r
}

// result is the message's outcome as the terminal event writes it.
func result(t Turn, status, text string) *store.Message {
	m := *t.Begun.Assistant
	m.Status, m.Content = status, text
	return &m
}

// finalRoute is what completed and error report: the routed endpoint, with the model and
// request id the upstream named.
func finalRoute(r events.Route, res stream.Result) events.Route {
	if res.Model != "" {
		m := res.Model
		r.ResolvedModel = &m
	}
	if res.UpstreamRequestID != "" {
		id := res.UpstreamRequestID
		r.UpstreamRequestID = &id
	}
	return r
}

// jsonOrNull encodes v for a JSON column; nil (and an empty value that encodes as null)
// stays SQL NULL. An encoding error is returned, never dropped: the column would be lost.
func jsonOrNull(v any) (store.JSON, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("finish: encode %T: %w", v, err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}
