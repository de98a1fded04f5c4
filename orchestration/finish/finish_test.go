package finish

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/lease"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// noReads is a planning store with nothing in it: a plan for these tests reads nothing.
type noReads struct{}

func (noReads) LatestMessages(context.Context, string, int) ([]store.Message, error) { return nil, nil }
func (noReads) GetStrategy(context.Context, string, string) (*store.Strategy, error) {
	return nil, store.ErrNotFound
}
func (noReads) LatestStrategy(context.Context, string, string) (*store.Strategy, error) {
	return nil, store.ErrNotFound
}
func (noReads) ActivePrompts(context.Context, string) (map[string]string, error) { return nil, nil }

// turnIn is a turn begun in phase, and its plan.
func turnIn(t *testing.T, phase string) (Turn, *prompt.Plan) {
	t.Helper()
	reg := handlers.New(handlers.Criteria{})
	b := &session.Begun{
		Session:   &store.Session{ID: "s1", UserID: "u1", Locale: "en", Phase: phase, Status: session.StatusActive, Artifacts: store.JSON(`{}`), Metadata: store.JSON(`{}`)},
		Assistant: &store.Message{ID: "a1", UserID: "u1", SessionID: "s1", Role: store.RoleAssistant, Status: store.StatusPending},
		Artifacts: prompt.FillBlocks(reg, session.Artifacts{}),
		Metadata:  session.Metadata{TurnCounts: map[string]int{phase: 1}},
	}
	p := prompt.NewPlanner(prompt.Config{ReplyPolicy: stream.PolicyRetry}, reg, noReads{}, nil, prompt.NewTexts(noReads{}, skills.New()))
	plan, err := p.Plan(context.Background(), prompt.Turn{Begun: b, UserText: "go on"})
	if err != nil {
		t.Fatal(err)
	}
	model := "gpt-test"
	return Turn{Begun: b, UserText: "go on", Owner: "replica-1", Route: events.Route{Provider: "openai", ResolvedModel: &model, EndpointID: 1}}, plan
}

// TestCompleted: what ends a turn whose reply stands, as one value.
func TestCompleted(t *testing.T) {
	reply := "<thinking>…</thinking><final>Done.</final>"
	cases := []struct {
		name     string
		phase    string
		settled  func(block handlers.Artifacts) postprocess.Settlement
		move     bool // the tail carries a move's settlement and phase_changed
		strategy string
		ignored  bool
	}{
		{name: "a reply that moves no phase settles with its terminal event", phase: "strategy",
			settled: func(b handlers.Artifacts) postprocess.Settlement { return postprocess.Settlement{Block: b} }},
		{name: "a recorded strategy goes in the settlement", phase: "strategy", strategy: "st-9",
			settled: func(b handlers.Artifacts) postprocess.Settlement {
				return postprocess.Settlement{Block: b, Strategy: &handlers.StrategyRecord{ID: "st-9", Name: "Momentum", Spec: map[string]any{"fast": 5}}}
			}},
		{name: "a completed phase moves, with its own settlement and phase_changed", phase: "stress_test", move: true,
			settled: func(b handlers.Artifacts) postprocess.Settlement {
				return postprocess.Settlement{Block: b, Move: true,
					Report: handlers.Report{Completed: true, NextPhase: phases.Deployment, Reason: "passed", ReasonSkill: "stress_test/moves/pass"}}
			}},
		{name: "a move the graph forbids is left out and said", phase: "strategy", ignored: true,
			settled: func(b handlers.Artifacts) postprocess.Settlement {
				return postprocess.Settlement{Block: b, Move: true, Report: handlers.Report{Completed: true, NextPhase: phases.Deployment, Reason: "skip"}}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			turn, plan := turnIn(t, tc.phase)
			out := stream.Outcome{Result: stream.Result{Text: reply, ResponseID: "resp_1", Model: "gpt-test-2025"}, Attempts: 1}
			tail, err := Completed(turn, Completion{Plan: plan, Outcome: out, Settled: tc.settled(plan.Block), Handlers: handlers.New(handlers.Criteria{}), At: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if tail.Name != events.Completed || tail.Code != "" || tail.Message.Status != store.StatusCompleted || tail.Message.Content != reply {
				t.Fatalf("tail %s %q, message %s %q", tail.Name, tail.Code, tail.Message.Status, tail.Message.Content)
			}
			data := tail.Data.(*events.CompletedData)
			if data.ReplyLen != len([]rune(reply)) || *data.ResolvedModel != "gpt-test-2025" {
				t.Fatalf("completed data %+v", data)
			}
			st := tail.Message.Settlement
			if tc.move {
				st = tail.Move
				if tail.Message.Settlement != nil || tail.PhaseChange == nil || tail.PhaseChange.To != "deployment" || st.Move == nil || st.Move.ToPhase != "deployment" {
					t.Fatalf("move %+v, phase change %+v", tail.Move, tail.PhaseChange)
				}
				if st.Session.Phase != "deployment" || !strings.Contains(string(st.Session.Metadata), `"carryover"`) {
					t.Fatalf("the moved session %s: %s", st.Session.Phase, st.Session.Metadata)
				}
			} else if tail.Move != nil || tail.PhaseChange != nil {
				t.Fatalf("a turn that moves nothing has move %+v, change %+v", tail.Move, tail.PhaseChange)
			}
			if (tail.IgnoredMove != nil) != tc.ignored {
				t.Fatalf("ignored move %v, want %v", tail.IgnoredMove, tc.ignored)
			}
			chain := "resp_1" // a move starts a fresh chain
			if tc.move {
				chain = ""
			}
			if st == nil || st.MessageID != "a1" || st.Owner != "replica-1" || st.Session.PreviousResponseID != chain {
				t.Fatalf("settlement %+v", st)
			}
			if tc.strategy != "" && (st.Strategy == nil || st.Strategy.ID != tc.strategy || string(st.Strategy.Spec) != `{"fast":5}`) {
				t.Fatalf("strategy %+v", st.Strategy)
			}
			var meta events.Metadata
			if err := json.Unmarshal(tail.Message.Metadata, &meta); err != nil || meta.RuntimePolicy == nil || meta.RuntimePolicy.ReplyPolicy != "retry" {
				t.Fatalf("metadata %s (%v): want the runtime policy recorded", tail.Message.Metadata, err)
			}
		})
	}
}

// TestFailed: the error's tail, by how the turn failed.
func TestFailed(t *testing.T) {
	cases := []struct {
		name         string
		cause, err   error
		partial      string
		noPlan       bool
		code, status string
		fallback     bool
		locale       string // "" for en
		message      string // the client's text
	}{
		{name: "cancelled keeps its partial text, no fallback", cause: lease.ErrCancelled, err: context.Canceled, partial: "half",
			code: failure.Cancelled, status: store.StatusCancelled},
		{name: "shutdown after partial text gets the fallback", cause: ErrInterrupted, err: context.Canceled, partial: "half",
			code: failure.Interrupted, status: store.StatusInterrupted, fallback: true},
		{name: "the turn's time limit", cause: ErrTurnTimeout, err: context.Canceled,
			code: failure.UpstreamTimeout, status: store.StatusFailed},
		{name: "a refused reply", err: &stream.RefusedError{Refused: [][]thinkingml.Issue{{{Code: thinkingml.CodeMalformedXML}}}}, partial: "<final>bad",
			code: failure.ReplyInvalid, status: store.StatusFailed},
		{name: "an upstream's rate limit", err: fmt.Errorf("stream: %w", &upstream.Error{Kind: upstream.KindRateLimited, HTTPStatus: 429, Message: "Rate limit reached"}),
			code: failure.RateLimited, status: store.StatusFailed},
		{name: "a planning failure, before any plan", err: errors.New("boom"), noPlan: true,
			code: failure.InternalError, status: store.StatusFailed, message: "Something went wrong on the server."},
		{name: "a zh session reads its error in Chinese", err: fmt.Errorf("stream: %w", &upstream.Error{Kind: upstream.KindUnavailable, HTTPStatus: 503}),
			code: failure.UpstreamUnavailable, status: store.StatusFailed, locale: "zh", message: "无法连接模型服务，请稍后再试。"},
		{name: "a zh session's fallback and error before any plan", cause: ErrInterrupted, err: context.Canceled, partial: "半", noPlan: true,
			code: failure.Interrupted, status: store.StatusInterrupted, fallback: true, locale: "zh", message: "服务器在回复完成之前停止了。"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			turn, plan := turnIn(t, "strategy")
			locale := cmp.Or(tc.locale, "en")
			f := Failure{Plan: plan, Outcome: stream.Outcome{Result: stream.Result{Text: tc.partial}}, Err: tc.err, Cause: tc.cause, Locale: locale}
			if tc.noPlan {
				f.Plan, f.Texts = nil, skills.New()
			}
			tail := Failed(turn, f)
			data := tail.Data.(*events.ErrorData)
			if tail.Name != events.Error || tail.Code != tc.code || data.Code != tc.code || tail.Message.Status != tc.status || tail.Message.Content != tc.partial {
				t.Fatalf("tail %s code %s (data %s), message %s %q; want %s, %s", tail.Name, tail.Code, data.Code, tail.Message.Status, tail.Message.Content, tc.code, tc.status)
			}
			if (data.Fallback != "") != tc.fallback {
				t.Fatalf("fallback %q, want one: %v", data.Fallback, tc.fallback)
			}
			if tc.message != "" && (data.Message != tc.message || data.Error != tc.message) {
				t.Fatalf("message %q (error %q), want %q", data.Message, data.Error, tc.message)
			}
			if tc.locale == "zh" && data.Fallback != "" && !strings.ContainsFunc(data.Fallback, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
				t.Fatalf("a zh fallback %q is not Chinese", data.Fallback)
			}
			if tc.code == failure.InternalError && strings.Contains(data.Message, "boom") {
				t.Fatalf("an internal error's words reached the client: %q", data.Message)
			}
			var meta events.FailureMetadata
			if err := json.Unmarshal(tail.Message.Metadata, &meta); err != nil || (meta.RuntimePolicy == nil) != tc.noPlan {
				t.Fatalf("metadata %s (%v)", tail.Message.Metadata, err)
			}
		})
	}
}

// TestMoveApply: the one way a phase moves, for turns and the manual routes alike.
func TestMoveApply(t *testing.T) {
	cases := []struct {
		name      string
		to        phases.Phase
		reason    string
		skill     string
		status    string
		wantInTxt string
	}{
		{name: "a user's words are carried as they are", to: phases.StressTest, reason: "my own reason", status: session.StatusActive, wantInTxt: "my own reason"},
		{name: "a handler's reason is said by its skill", to: phases.StressTest, reason: "confirmed and backtested", skill: "strategy/moves/done",
			status: session.StatusActive, wantInTxt: "the strategy is confirmed"},
		{name: "the last phase completes the session", to: phases.Completed, reason: "done", status: session.StatusCompleted, wantInTxt: "done"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := handlers.New(handlers.Criteria{})
			sess := &store.Session{ID: "s1", Locale: "en", Phase: "strategy", Status: session.StatusActive, PreviousResponseID: "resp_old"}
			arts := prompt.FillBlocks(reg, session.Artifacts{})
			meta := &session.Metadata{}
			m := Move{From: phases.Strategy, To: tc.to, Reason: tc.reason, ReasonSkill: tc.skill, MessageID: "a1", Evidence: map[string]any{"route": "manual"}}
			tr, err := m.Apply(skills.New(), reg, sess, arts, meta, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if sess.Phase != string(tc.to) || sess.Status != tc.status || sess.PreviousResponseID != "" {
				t.Fatalf("session %s %s chain %q", sess.Phase, sess.Status, sess.PreviousResponseID)
			}
			if meta.Carryover == nil || meta.Carryover.To != string(tc.to) || !strings.Contains(meta.Carryover.Text, tc.wantInTxt) {
				t.Fatalf("carryover %+v", meta.Carryover)
			}
			// The transition keeps the reason as the session reads it: the skill's words.
			if tr.FromPhase != "strategy" || tr.ToPhase != string(tc.to) || !strings.Contains(tr.Reason, tc.wantInTxt) || string(tr.Metadata) != `{"route":"manual"}` {
				t.Fatalf("transition %+v", tr)
			}
		})
	}
}
