package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The client libraries front ends already use, driven against the real binary: the AI
// SDK's DefaultChatTransport and stream reader and AG-UI's HttpAgent in Node
// (tests/frontends, installed by .ci/run with npm ci from its lock file), and a React page
// with @ai-sdk/react's useChat in Chromium (frontends_browser_test.go).

// frontends is the folder of those npm packages. Without them the test skips on a
// developer's machine and fails in CI.
func frontends(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("frontends")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the front-end packages are not installed (npm ci --prefix tests/frontends): %v", err)
		}
		t.Skipf("the front-end packages are not installed (npm ci --prefix tests/frontends): %v", err)
	}
	return dir
}

// node runs a script of tests/frontends and decodes the JSON it prints into out.
func node(t *testing.T, dir string, out any, args ...string) {
	t.Helper()
	if err := runNode(dir, out, args...); err != nil {
		t.Fatal(err)
	}
}

// runNode is node for a goroutine of the test's: it reports instead of failing.
func runNode(dir string, out any, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("node %s: %w\n%s", strings.Join(args, " "), err, stderrOf(err))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("node %s printed %q: %w", args[0], b, err)
	}
	return nil
}

// finalAnswer is what a text-only client should show of a stored reply: the content of its
// <final> block, read here with plain string search (ThinkingML puts exactly one there).
func finalAnswer(t *testing.T, reply string) string {
	t.Helper()
	_, rest, ok := strings.Cut(reply, "<final>")
	inner, _, closed := strings.Cut(rest, "</final>")
	if !ok || !closed {
		t.Fatalf("the stored reply has no <final> block: %q", reply)
	}
	return strings.TrimLeft(inner, " \t\r\n")
}

// sdkResult is what aisdk.mjs prints.
type sdkResult struct {
	Status  int `json:"status"`
	Message struct {
		ID    string           `json:"id"`
		Parts []map[string]any `json:"parts"`
	} `json:"message"`
	Text      string   `json:"text"`
	Discarded string   `json:"discarded"`
	Errors    []string `json:"errors"`
	Chunks    []string `json:"chunks"`
}

// partTypes are the assembled message's part types.
func (r sdkResult) partTypes() string {
	var out []string
	for _, p := range r.Message.Parts {
		out = append(out, p["type"].(string))
	}
	return strings.Join(out, " ")
}

// TestAISDKTransport drives the AI SDK's own transport and reader: a reply streams as
// reasoning and text parts with its cards, state and tool calls; a corrected reply keeps
// the refused attempt's text marked discarded and the kept one unmarked; a failure reaches
// the SDK as an error; a reader cut after its first text resumes from the conversation's
// stream and assembles the whole reply; an idle conversation resumes to nothing (204); the
// conversation loads as UIMessages with the kept reply only.
func TestAISDKTransport(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		dir := frontends(t)
		s := startServer(t)
		tok := s.token("ada")
		stored := func(r sdkResult) string {
			t.Helper()
			return finalAnswer(t, waitFinished(t, s, tok, r.Message.ID)["content"].(string))
		}

		var plain sdkResult
		node(t, dir, &plain, "aisdk.mjs", "send", s.base, tok, "chat-plain", "Draft a BTC momentum strategy")
		if plain.Status != 200 || len(plain.Errors) > 0 || plain.Text != stored(plain) {
			t.Fatalf("plain reply: %+v\nwant text %q", plain, stored(plain))
		}
		if got := plain.partTypes(); !strings.HasPrefix(got, "data-status reasoning text data-genui") || !strings.Contains(got, "data-state dynamic-tool") {
			t.Errorf("plain reply's parts: %s", got)
		}

		var fixed sdkResult
		node(t, dir, &fixed, "aisdk.mjs", "send", s.base, tok, "chat-fixed", "Draft a BTC momentum strategy [[fault:broken_xml_once]]")
		if fixed.Text != stored(fixed) || fixed.Discarded == "" {
			t.Errorf("corrected reply: text %q (discarded %q), want the kept reply %q", fixed.Text, fixed.Discarded, stored(fixed))
		}

		var failed sdkResult
		node(t, dir, &failed, "aisdk.mjs", "send", s.base, tok, "chat-failed", "Draft a BTC momentum strategy [[fault:http_500]]")
		if len(failed.Errors) == 0 || !strings.Contains(strings.Join(failed.Chunks, " "), "error") {
			t.Errorf("a failed turn reached the SDK as %+v", failed)
		}

		var cut sdkResult
		node(t, dir, &cut, "aisdk.mjs", "cut", s.base, tok, "chat-cut", "Draft a BTC momentum strategy [[pace_ms:25]]")
		if cut.Status != 200 || cut.Text != stored(cut) {
			t.Errorf("resumed after a cut: status %d, text %q, want %q", cut.Status, cut.Text, stored(cut))
		}

		var idle sdkResult
		node(t, dir, &idle, "aisdk.mjs", "resume", s.base, tok, "chat-plain")
		if idle.Status != 204 {
			t.Errorf("resuming an idle conversation: %+v, want 204", idle)
		}

		var loaded []struct {
			ID    string           `json:"id"`
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		}
		s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/ai-sdk/chat/chat-fixed/messages", tok, nil, &loaded)
		if len(loaded) != 2 || loaded[1].ID != fixed.Message.ID {
			t.Fatalf("the conversation loaded as %+v", loaded)
		}
		var texts []string
		for _, p := range loaded[1].Parts {
			if p["type"] == "text" {
				texts = append(texts, p["text"].(string))
			}
		}
		if strings.Join(texts, "") != stored(fixed) {
			t.Errorf("the loaded reply's text %q, want the kept reply only", texts)
		}
	})
}

// aguiResult is what agui.mjs prints.
type aguiResult struct {
	Messages []struct {
		ID      string `json:"id"`
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
	State struct {
		Phase     string                    `json:"phase"`
		Artifacts map[string]map[string]any `json:"artifacts"`
	} `json:"state"`
	Events     []string `json:"events"`
	Activities []struct {
		ActivityType string         `json:"activityType"`
		Content      map[string]any `json:"content"`
	} `json:"activities"`
	Error *string `json:"error"`
}

// assistant is the assistant's text message the agent holds.
func (r aguiResult) assistant() (id, text string) {
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			s, _ := m.Content.(string)
			return m.ID, s
		}
	}
	return "", ""
}

// TestAGUIHttpAgent drives AG-UI's own HttpAgent: a run ends with the kept reply as the
// assistant's message, the state patch applied to the agent's state and the cards as
// activities; a corrected run ends with the kept attempt only; a second agent posting the
// same run while it streams joins it (whichever of the two posts first, the other joins),
// and the server runs one generation.
func TestAGUIHttpAgent(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		dir := frontends(t)
		s := startServer(t)
		tok := s.token("grace")

		var run aguiResult
		node(t, dir, &run, "agui.mjs", s.base, tok, "thread-1", "run-1", "Draft a BTC momentum strategy")
		id, text := run.assistant()
		if run.Error != nil || text != finalAnswer(t, waitFinished(t, s, tok, id)["content"].(string)) {
			t.Fatalf("run: error %v, text %q", run.Error, text)
		}
		if run.State.Phase != "strategy" || run.State.Artifacts["strategy"]["strategy_draft"] == nil {
			t.Errorf("the state after the run: %+v (the patch sets strategy_draft)", run.State)
		}
		if len(run.Activities) == 0 || run.Activities[0].ActivityType != "phaseflow.genui" || run.Activities[0].Content["type"] == nil {
			t.Errorf("cards: %+v", run.Activities)
		}

		var fixed aguiResult
		node(t, dir, &fixed, "agui.mjs", s.base, tok, "thread-2", "run-2", "Draft a BTC momentum strategy [[fault:broken_xml_once]]")
		id, text = fixed.assistant()
		var roles []string
		for _, m := range fixed.Messages {
			roles = append(roles, m.Role)
		}
		if text != finalAnswer(t, waitFinished(t, s, tok, id)["content"].(string)) || strings.Count(strings.Join(roles, " "), "reasoning") != 1 {
			t.Errorf("corrected run: messages %v, text %q", roles, text)
		}

		var first aguiResult
		joined := make(chan error, 1)
		go func() {
			joined <- runNode(dir, &first, "agui.mjs", s.base, tok, "thread-3", "run-3", "Draft a BTC momentum strategy [[pace_ms:30]]")
		}()
		time.Sleep(700 * time.Millisecond) // the first run is streaming
		var second aguiResult
		node(t, dir, &second, "agui.mjs", s.base, tok, "thread-3", "run-3", "Draft a BTC momentum strategy [[pace_ms:30]]")
		if err := <-joined; err != nil {
			t.Fatal(err)
		}
		id1, text1 := first.assistant()
		id2, text2 := second.assistant()
		joins := 0
		for _, r := range []aguiResult{first, second} {
			if strings.Contains(strings.Join(r.Events, " "), "MESSAGES_SNAPSHOT") {
				joins++
			}
		}
		if id1 != id2 || text1 != text2 || text1 == "" || joins != 1 {
			t.Errorf("joined run: %q %q / %q %q, %d of the two joined", id1, text1, id2, text2, joins)
		}
		var sessions struct {
			Sessions []struct{ ID string } `json:"sessions"`
		}
		s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/sessions", tok, nil, &sessions)
		for _, sess := range sessions.Sessions {
			var msgs struct {
				Messages []struct{ Role string } `json:"messages"`
			}
			s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/sessions/"+sess.ID+"/messages", tok, nil, &msgs)
			if n := len(msgs.Messages); n != 2 {
				t.Errorf("session %s holds %d messages, want one turn (2): a joined run started a second generation?", sess.ID, n)
			}
		}
	})
}

// TestProtocolRoutesRefuseAsTheAPIDoes: the protocols' routes take the same token, limits
// and error shapes as the rest of the API (every answer here is checked against the
// OpenAPI document by the test client).
func TestProtocolRoutesRefuseAsTheAPIDoes(t *testing.T) {
	s := startServer(t, "PHASEFLOW_MAX_BODY_BYTES=4096", "PHASEFLOW_MAX_STREAMS_PER_USER=1")
	tok := s.token("ivy")
	ctx := ctxFor(t, 30*time.Second)
	chat := func(id, text string) map[string]any {
		return map[string]any{"id": id, "messages": []any{map[string]any{"id": "u-" + id, "role": "user",
			"parts": []any{map[string]any{"type": "text", "text": text}}}}}
	}
	var e struct {
		Error struct {
			Code      string `json:"code"`
			MessageID string `json:"message_id"`
		} `json:"error"`
	}
	expect := func(resp *http.Response, status int, code string) {
		t.Helper()
		if resp.StatusCode != status || (code != "" && e.Error.Code != code) {
			t.Errorf("%s %s = %d %q, want %d %q", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, e.Error.Code, status, code)
		}
		e.Error.Code, e.Error.MessageID = "", ""
	}
	expect(s.call(ctx, http.MethodPost, "/api/v1/ai-sdk/chat", "", chat("c", "hi"), &e), 401, "unauthorized")
	expect(s.call(ctx, http.MethodPost, "/api/v1/ag-ui", "", map[string]any{}, &e), 401, "unauthorized")
	expect(s.call(ctx, http.MethodPost, "/api/v1/ai-sdk/chat", tok, map[string]any{"messages": []any{}}, &e), 400, "bad_request")
	expect(s.call(ctx, http.MethodPost, "/api/v1/ag-ui", tok, map[string]any{"threadId": "t"}, &e), 400, "bad_request")
	expect(s.call(ctx, http.MethodPost, "/api/v1/ai-sdk/chat", tok, chat("big", strings.Repeat("x", 5000)), &e), 413, "body_too_large")
	expect(s.call(ctx, http.MethodGet, "/api/v1/ai-sdk/chat/none/stream", tok, nil, nil), 204, "")
	var none []any
	expect(s.call(ctx, http.MethodGet, "/api/v1/ai-sdk/chat/none/messages", tok, nil, &none), 200, "")
	if len(none) != 0 {
		t.Errorf("a conversation not started holds %v", none)
	}

	// A run streaming in a thread holds the user's one stream: another post is 429. Once its
	// reader is gone the run goes on, named as the session's running message, and another
	// run of the thread is 409 with that message.
	run := map[string]any{"threadId": "th", "runId": "r1", "messages": []any{map[string]any{"id": "u1", "role": "user",
		"content": "Draft a BTC momentum strategy [[pace_ms:60]]"}}}
	stream := openPost(t, s, "/api/v1/ag-ui", tok, run)
	run["runId"] = "r2"
	expect(s.call(ctx, http.MethodPost, "/api/v1/ag-ui", tok, run, &e), 429, "too_many_streams")
	_ = stream.Body.Close()
	var sessions struct {
		Sessions []struct{ ID string } `json:"sessions"`
	}
	s.call(ctx, http.MethodGet, "/api/v1/sessions", tok, nil, &sessions)
	var sess struct {
		RunningMessageID *string `json:"running_message_id"`
	}
	s.call(ctx, http.MethodGet, "/api/v1/sessions/"+sessions.Sessions[0].ID, tok, nil, &sess)
	if sess.RunningMessageID == nil {
		t.Fatal("the session of a streaming run names no running message")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp := s.call(ctx, http.MethodPost, "/api/v1/ag-ui", tok, run, &e)
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) { // the closed stream's slot is back
			if resp.StatusCode != http.StatusConflict || e.Error.MessageID != *sess.RunningMessageID {
				t.Errorf("another run while one runs = %d %q (message %q), want 409 generation_running naming %s",
					resp.StatusCode, e.Error.Code, e.Error.MessageID, *sess.RunningMessageID)
			}
			break
		}
	}
}

// openPost posts body and answers the response with its event stream still open.
func openPost(t *testing.T, s *server, path, token string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.base+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("POST %s = %d", path, resp.StatusCode)
	}
	return resp
}
