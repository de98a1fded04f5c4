package orchestration

import (
	"context"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/internal/langtest"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
)

// zhReply is a valid Chinese ThinkingML reply with extra text after </final>.
func zhReply(after string) string {
	return "<thinking>\n<phase id=\"1\"><title>理解需求</title>\n阅读用户的请求并作答。\n</phase>\n</thinking>\n" +
		"<final>\n这是你要的回答，已经完整写出。\n<!-- <serp_queries>\n[\"动量策略\"]\n</serp_queries> -->\n</final>" + after
}

// TestZhTurnsSendNoEnglish renders what the model reads in a zh session through every
// path that adds server text: a reply refused for its language (the correction note), a
// phase move by the handler's verdict (the carryover with its reason and exchange labels)
// and a manual move without a reason. Nothing the server wrote may reach the model as an
// English sentence: every such text comes from skills/zh.
func TestZhTurnsSendNoEnglish(t *testing.T) {
	move := "<AGENT_STATE_PATCH>{\"strategy_status\":\"confirmed\",\"advance_to_stress_test\":true}</AGENT_STATE_PATCH>"
	up := &fakeUpstream{scripts: []script{
		{deltas: []string{reply("")}}, // English in a zh session: refused
		{deltas: []string{zhReply(move)}},
		{deltas: []string{zhReply("")}},
		{deltas: []string{zhReply("")}},
	}}
	h := newHarness(t, up)
	ctx := context.Background()
	sess, err := h.orch.CreateSession(ctx, "u1", "t", "zh")
	if err != nil {
		t.Fatal(err)
	}
	sess.Artifacts = store.JSON(`{"strategy":{"strategy_id":"s-1","strategy_status":"validated","backtest_status":"completed","advance_to_stress_test":false}}`)
	if err := h.st.UpdateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	turn := func(text string) {
		t.Helper()
		tr, err := h.orch.HandleMessage(ctx, Request{Request: session.Request{UserID: "u1", SessionID: sess.ID, Text: text, RequestID: "r"}})
		if err != nil {
			t.Fatal(err)
		}
		h.follow(tr.MessageID)
	}
	turn("确认策略并进入压力测试")
	turn("开始压力测试")
	if _, err := h.orch.MovePhase(ctx, "u1", sess.ID, "strategy", ""); err != nil {
		t.Fatal(err)
	}
	turn("回到策略")

	if len(up.requests) != 4 {
		t.Fatalf("%d upstream requests, want 4 (a retry, then two turns)", len(up.requests))
	}
	wants := []struct{ where, text string }{
		{"the retry's instructions name the problem by code", "`reply_language`"},
		{"the first turn of the new phase gets the carryover", "[CARRYOVER]"},
		{"the manual move leaves a carryover too", "[CARRYOVER]"},
	}
	for i, w := range wants {
		req := up.requests[i+1]
		all := req.Instructions
		for _, in := range req.Input {
			all += "\n" + in.Content
		}
		if !strings.Contains(all, w.text) {
			t.Errorf("request %d: %s, but %q is missing:\n%s", i+2, w.where, w.text, all)
		}
	}
	for i, req := range up.requests {
		texts := []string{req.Instructions}
		for _, in := range req.Input {
			if in.Role == "user" || i > 0 { // the refused English reply never enters the history
				texts = append(texts, in.Content)
			}
		}
		for _, text := range texts {
			if runs := langtest.EnglishRuns(text); len(runs) > 0 {
				t.Errorf("request %d of a zh session carries English prose %q in:\n%s", i+1, runs, text)
			}
		}
	}
}
