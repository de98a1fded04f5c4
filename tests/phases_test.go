package tests

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// walk drives one session through the API, turn by turn, and keeps what each step needs.
type walk struct {
	t    *testing.T
	s    *server
	tok  string
	sid  string
	turn int
}

// say posts text, follows the turn to completed and returns completed.metadata and whether
// a status phase_changed came before it.
func (w *walk) say(text string) (meta map[string]any, changed map[string]any) {
	w.t.Helper()
	w.turn++
	a := w.s.post(w.tok, w.sid, text)
	evs := w.s.follow(a)
	logs := checkStream(w.t, evs, 1, a.MessageID, a.RequestID)
	last := logs[len(logs)-1]
	if last.Name != "completed" {
		w.t.Fatalf("turn %d (%q) ended with %s %v", w.turn, text, last.Name, last.Data)
	}
	for _, ev := range logs {
		if ev.Name == "status" && ev.Data["state"] == "phase_changed" {
			changed = ev.Data
		}
	}
	return last.Data["metadata"].(map[string]any), changed
}

// session reads the session through the API.
func (w *walk) session() (phase string, artifacts map[string]any) {
	w.t.Helper()
	var sess struct {
		Phase     string         `json:"phase"`
		Status    string         `json:"status"`
		Artifacts map[string]any `json:"artifacts"`
	}
	w.s.call(ctxFor(w.t, 10*time.Second), http.MethodGet, "/api/v1/sessions/"+w.sid, w.tok, nil, &sess)
	return sess.Phase, sess.Artifacts
}

// field reads artifacts[phase][name].
func (w *walk) field(phase, name string) any {
	_, arts := w.session()
	block, _ := arts[phase].(map[string]any)
	return block[name]
}

// expectPhase fails unless the session is in phase.
func (w *walk) expectPhase(phase string) {
	w.t.Helper()
	if got, _ := w.session(); got != phase {
		w.t.Fatalf("after turn %d the session is in %s, want %s", w.turn, got, phase)
	}
}

// lastUserInput is the text of the last user input the upstream received.
func (w *walk) lastUserInput() string {
	w.t.Helper()
	in := w.lastRecorded().Input
	return in[len(in)-1].Content
}

// recordedBody is the part of a request body the scripted upstream recorded that the walk
// looks at.
type recordedBody struct {
	Instructions string                           `json:"instructions"`
	Tools        []json.RawMessage                `json:"tools"`
	Input        []struct{ Role, Content string } `json:"input"`
}

// lastRecorded returns the body of the last request the upstream received.
func (w *walk) lastRecorded() recordedBody {
	w.t.Helper()
	var rec struct {
		Requests []struct {
			Body recordedBody `json:"body"`
		} `json:"requests"`
	}
	resp, err := http.Get(w.s.mockURL + "/_scripted/requests")
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil || len(rec.Requests) == 0 {
		w.t.Fatalf("recorded requests: %v (%d)", err, len(rec.Requests))
	}
	return rec.Requests[len(rec.Requests)-1].Body
}

// expectCarryover checks that this phase's first turn got the carryover block before the
// user's text, naming the phase it came from, and that the next turn does not.
func (w *walk) expectCarryover(first bool, from string) {
	w.t.Helper()
	got := w.lastUserInput()
	has := strings.HasPrefix(got, "[CARRYOVER]")
	if first && (!has || !strings.Contains(got, from)) {
		w.t.Fatalf("turn %d: the upstream did not get the carryover from %s before the user's text:\n%s", w.turn, from, got)
	}
	if !first && has {
		w.t.Fatalf("turn %d: the carryover was sent again:\n%s", w.turn, got)
	}
}

func (w *walk) confirm(strategyID string) {
	w.t.Helper()
	var st map[string]any
	resp := w.s.call(ctxFor(w.t, 10*time.Second), http.MethodPost, "/api/v1/strategies/"+strategyID+"/confirm", w.tok,
		map[string]bool{"advance_to_stress_test": true}, &st)
	if resp.StatusCode != http.StatusOK || st["status"] != "confirmed" {
		w.t.Fatalf("confirm: %d %v", resp.StatusCode, st)
	}
}

func TestPhasesWalkFromStrategyToCompleted(t *testing.T) {
	for _, locale := range []string{"en", "zh"} {
		t.Run(locale, func(t *testing.T) { walkAllPhases(t, locale) })
	}
}

func walkAllPhases(t *testing.T, locale string) {
	s := startServer(t)
	w := &walk{t: t, s: s, tok: s.token("walker-" + locale)}
	w.sid = s.newSession(w.tok, locale)
	say := func(en, zh string) (map[string]any, map[string]any) {
		if locale == "zh" {
			return w.say(zh)
		}
		return w.say(en)
	}

	// Strategy: drafted (validate_strategy), backtested, then confirmed through the route.
	say("Draft a BTC momentum strategy", "帮我起草一个比特币动量策略")
	strategyID, _ := w.field("strategy", "strategy_id").(string)
	if strategyID == "" || w.field("strategy", "strategy_status") != "draft" {
		t.Fatalf("after the draft: strategy_id %q, status %v", strategyID, w.field("strategy", "strategy_status"))
	}
	say("Run the backtest", "请运行回测")
	if w.field("strategy", "backtest_status") != "completed" {
		t.Fatalf("backtest_status = %v after the backtest turn", w.field("strategy", "backtest_status"))
	}
	meta, _ := say("Looks good", "看起来不错")
	w.expectPhase("strategy") // nothing moves before the user confirms
	if missing := meta["missing_fields"].([]any); len(missing) == 0 {
		t.Fatal("the confirm stage reported no missing fields")
	}
	refuse(t, s, w, "deployment") // the graph has no strategy → deployment
	w.confirm(strategyID)
	w.expectPhase("stress_test")

	// Stress test, first pass: carryover on its first turn only, then a revision request.
	say("Set up the stress scenarios", "请设置压力测试情景")
	w.expectCarryover(true, "strategy")
	say("Run them", "运行这些情景")
	w.expectCarryover(false, "")
	_, changed := say("I want changes [[scenario:stress_feedback_revise]]", "我想修改 [[scenario:stress_feedback_revise]]")
	if changed == nil || changed["from"] != "stress_test" || changed["to"] != "strategy" {
		t.Fatalf("phase_changed after revise = %v", changed)
	}
	w.expectPhase("strategy")
	if w.field("strategy", "strategy_id") != strategyID || w.field("strategy", "advance_to_stress_test") != false {
		t.Fatalf("strategy block after the revision: id %v advance %v", w.field("strategy", "strategy_id"), w.field("strategy", "advance_to_stress_test"))
	}

	// Strategy again: backtest anew (carryover from the stress test), confirm, second pass.
	say("Backtest the revised strategy", "回测修改后的策略")
	w.expectCarryover(true, "stress_test")
	w.confirm(strategyID)
	w.expectPhase("stress_test")
	meta, changed = say("Decide", "请给出结论")
	if changed == nil || changed["to"] != "deployment" || meta["phase_change"] == nil {
		t.Fatalf("second stress pass did not move to deployment: %v / %v", changed, meta["phase_change"])
	}

	// Deployment: prepared, rolled out, blocked once (back to strategy).
	meta, _ = say("Prepare the deployment", "准备部署")
	if summary, _ := meta["deployment_summary"].(map[string]any); summary == nil || summary["deployment_target"] != "paper" {
		t.Fatalf("completed.metadata.deployment_summary = %v", meta["deployment_summary"])
	}
	say("Roll it out", "开始上线")
	say("How is it going? [[scenario:deploy_monitor_blocked]]", "运行得怎么样？ [[scenario:deploy_monitor_blocked]]")
	w.expectPhase("strategy")

	// Back through strategy and stress test, then deployment to the end.
	say("Backtest again", "再回测一次")
	w.confirm(strategyID)
	say("Decide again", "再给出结论")
	w.expectPhase("deployment")
	say("Prepare again", "重新准备部署")
	say("Roll out again", "重新上线")
	_, changed = say("Finish", "完成交接")
	if changed == nil || changed["to"] != "completed" {
		t.Fatalf("the last turn did not complete the session: %v", changed)
	}
	w.expectPhase("completed")
	refuse(t, s, w, "strategy") // completed is final

	checkTransitions(t, s, w, []string{
		"strategy>stress_test", "stress_test>strategy", "strategy>stress_test", "stress_test>deployment",
		"deployment>strategy", "strategy>stress_test", "stress_test>deployment", "deployment>completed",
	})
}

// refuse checks that the manual phase route refuses a move the graph forbids.
func refuse(t *testing.T, s *server, w *walk, to string) {
	t.Helper()
	var e errorBody
	resp := s.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/sessions/"+w.sid+"/phase", w.tok, map[string]string{"to": to, "reason": "test"}, &e)
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("forbidden move to %s answered %d %+v, want 422", to, resp.StatusCode, e)
	}
}

func checkTransitions(t *testing.T, s *server, w *walk, want []string) {
	t.Helper()
	var tr struct {
		Transitions []struct {
			From, To, Reason string
			MessageID        string         `json:"message_id"`
			Metadata         map[string]any `json:"metadata"`
		} `json:"transitions"`
	}
	s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/sessions/"+w.sid+"/transitions", w.tok, nil, &tr)
	var got []string
	for _, m := range tr.Transitions {
		got = append(got, m.From+">"+m.To)
		if m.Reason == "" || m.Metadata == nil {
			t.Fatalf("transition %s>%s lacks its reason or evidence: %+v", m.From, m.To, m)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("transitions:\n got %v\nwant %v", got, want)
	}
	if first := tr.Transitions[0]; first.MessageID != "" || first.Metadata["source"] != "confirm_route" {
		t.Fatalf("the first move came from the confirm route, got %+v", first)
	}
	if revise := tr.Transitions[1]; revise.MessageID == "" {
		t.Fatalf("the revision move names no message: %+v", revise)
	}
}

// TestTurnLimitNudge: past the phase's turn limit, the handler's nudge replaces the phase's
// normal prompt pieces and no tools are offered; turns are counted per phase.
func TestTurnLimitNudge(t *testing.T) {
	s := startServer(t, "PHASEFLOW_PHASE_TURN_LIMIT=2")
	w := &walk{t: t, s: s, tok: s.token("nina")}
	w.sid = s.newSession(w.tok, "en")
	for i := 1; i <= 3; i++ {
		w.say("tell me more")
		body := w.lastRecorded()
		ins, tools := body.Instructions, len(body.Tools)
		nudged := strings.Contains(ins, "gone past 2 turns in the strategy phase") // skills/en/strategy/nudge.md
		if nudged != (i > 2) {
			t.Fatalf("turn %d: nudge in the instructions = %v, want %v", i, nudged, i > 2)
		}
		if i > 2 && tools != 0 {
			t.Fatalf("turn %d: %d tools offered with the nudge, want none", i, tools)
		}
	}
	var sess struct {
		Metadata struct {
			TurnCounts map[string]int `json:"turn_counts"`
		} `json:"metadata"`
	}
	s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/sessions/"+w.sid, w.tok, nil, &sess)
	if sess.Metadata.TurnCounts["strategy"] != 3 {
		t.Fatalf("turn_counts = %v, want strategy: 3", sess.Metadata.TurnCounts)
	}
}
