package tests

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestUserCallBudget: with PHASEFLOW_USER_CALL_BUDGET every model call a user's work makes
// counts, a correction retry and a JSON skill's call too, in the database: two replicas on
// one database share it. Past it new work is 429 budget_exhausted with Retry-After and
// reaches no upstream; another user is not affected; GET /me/usage says what was used.
func TestUserCallBudget(t *testing.T) {
	a := startServer(t, "PHASEFLOW_USER_CALL_BUDGET=4")
	env := append(append([]string{}, a.env...), "PHASEFLOW_DATA_DIR="+t.TempDir())
	p, addr := start(t, "phaseflow listening on ", env, "serve")
	b := &server{t: t, base: addr, proc: p, mockURL: a.mockURL, dsn: a.dsn, env: env, auth: a.auth, bin: a.bin}
	tok := a.token("penny")
	ctx := ctxFor(t, 60*time.Second)

	sid := a.newSession(tok, "en")
	waitFinished(t, a, tok, a.post(tok, sid, "hello").MessageID)                                  // 1 call, on A
	waitFinished(t, b, tok, b.post(tok, sid, "again please [[fault:broken_xml_once]]").MessageID) // 2 calls, on B
	var run map[string]any
	if resp := a.call(ctx, http.MethodPost, "/api/v1/skills/post_views/runs", tok, map[string]any{"input": postInput("")}, &run); resp.StatusCode != http.StatusOK {
		t.Fatalf("skill run within the budget = %d %v", resp.StatusCode, run) // the 4th call
	}

	var usage map[string]any
	if resp := b.call(ctx, http.MethodGet, "/api/v1/me/usage", tok, nil, &usage); resp.StatusCode != http.StatusOK ||
		usage["calls"] != 4.0 || usage["budget"] != 4.0 || usage["input_tokens"].(float64) <= 0 || usage["resets_at"] == nil {
		t.Fatalf("GET /me/usage = %d %v, want 4 calls of a budget of 4, with tokens and the reset", resp.StatusCode, usage)
	}

	before := len(allRecorded(t, a))
	for _, tc := range []struct {
		srv        *server
		path       string
		body       any
		whatRefuse string
	}{
		{a, "/api/v1/sessions/" + sid + "/messages", map[string]string{"text": "one more"}, "a message on A"},
		{b, "/api/v1/messages", map[string]string{"text": "one more"}, "a message on B"},
		{b, "/api/v1/skills/post_views/runs", map[string]any{"input": postInput("")}, "a skill run"},
		{a, "/api/v1/skills/post_views/jobs", map[string]any{"inputs": []any{postInput("")}}, "a skill job"},
	} {
		var e errorBody
		resp := tc.srv.call(ctx, http.MethodPost, tc.path, tok, tc.body, &e)
		retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != "budget_exhausted" || retry <= 0 || retry > 86400 {
			t.Fatalf("%s past the budget = %d %+v Retry-After %q, want 429 budget_exhausted until the next UTC day",
				tc.whatRefuse, resp.StatusCode, e, resp.Header.Get("Retry-After"))
		}
	}
	if len(allRecorded(t, a)) != before {
		t.Fatal("work refused for the budget reached the upstream")
	}

	other := a.token("quentin")
	waitFinished(t, a, other, a.post(other, a.newSession(other, "en"), "hello").MessageID)
}
