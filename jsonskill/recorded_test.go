package jsonskill

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/upstream/router"
)

// replayer answers every request with one recorded answer of a real provider
// (upstream/testdata/recorded, sources in its SOURCES.md) and keeps the requests.
type replayer struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (rp *replayer) serve(t *testing.T, file string) *httptest.Server {
	t.Helper()
	answer, err := os.ReadFile(filepath.Join("..", "upstream", "testdata", "recorded", file))
	if err != nil {
		t.Fatal(err)
	}
	ctype := "text/event-stream"
	if strings.HasSuffix(file, ".json") {
		ctype = "application/json"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err == nil {
			rp.mu.Lock()
			rp.bodies = append(rp.bodies, body)
			rp.mu.Unlock()
		}
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Real answers replayed to terminal_state on their own wire, in both output modes: each
// ends as it deserves, a refusal and a truncation after one call with their text kept,
// every other failure of the answer after the one correction retry.
func TestRecordedAnswersEndRunsAsTheyDeserve(t *testing.T) {
	const sorry = "I'm sorry, I can't assist with that request."
	cases := []struct {
		file, code    string
		calls         int
		refusal       string
		partial       string
		messageNaming string
	}{
		{file: "chat_openai_refusal.sse", code: failure.ModelRefused, calls: 1, refusal: sorry, messageNaming: sorry},
		{file: "chat_openai_refusal.json", code: failure.ModelRefused, calls: 1, refusal: "I'm very sorry, but I can't assist with that."},
		{file: "responses_documented_refusal.sse", code: failure.ModelRefused, calls: 1, refusal: sorry},
		{file: "chat_openai_length.sse", code: failure.OutputTruncated, calls: 1, partial: `{"`, messageNaming: "2048 tokens"},
		{file: "chat_openai_length.json", code: failure.OutputTruncated, calls: 1, partial: `{"`},
		{file: "responses_documented_incomplete.sse", code: failure.OutputTruncated, calls: 1, partial: `{"status":"has_q`},
		{file: "responses_openai_insufficient_quota.sse", code: failure.ProviderError, calls: 1},
		// Answers of other schemas: valid JSON, refused by terminal_state's schema, corrected once.
		{file: "chat_openai_strict.sse", code: failure.SkillOutputInvalid, calls: 2},
		{file: "chat_openai_strict.json", code: failure.SkillOutputInvalid, calls: 2},
		{file: "chat_openai_json_mode.sse", code: failure.SkillOutputInvalid, calls: 2},
		{file: "chat_deepseek_json.json", code: failure.SkillOutputInvalid, calls: 2},
		// The fence is stripped: the object is read, and refused by the schema, not as "no object".
		{file: "chat_fenced_json.json", code: failure.SkillOutputInvalid, calls: 2, messageNaming: "missing properties"},
		// Prose: no JSON object at all.
		{file: "chat_deepseek_reasoning.sse", code: failure.SkillOutputInvalid, calls: 2},
		{file: "responses_openai_text.json", code: failure.SkillOutputInvalid, calls: 2},
	}
	for _, tc := range cases {
		for _, mode := range []string{upstream.JSONModeStructured, upstream.JSONModeTextJSON} {
			t.Run(tc.file+"/"+mode, func(t *testing.T) {
				rp := &replayer{}
				srv := rp.serve(t, tc.file)
				runner := recordedRunner(t, srv.URL+"/v1", strings.HasPrefix(tc.file, "chat_"), mode)
				input, _ := json.Marshal(map[string]string{"terminal": "⏺ Which approach do you prefer?\n\n❯ "})
				run, err := runner.Run(t.Context(), Request{UserID: "u1", Skill: "terminal_state", Input: input})
				if err != nil {
					t.Fatal(err)
				}
				var e struct{ Code, Message string }
				var m meta
				if err := json.Unmarshal(run.Error, &e); err != nil || json.Unmarshal(run.Meta, &m) != nil {
					t.Fatalf("error %s, meta %s: %v", run.Error, run.Meta, err)
				}
				if run.Status != store.RunFailed || e.Code != tc.code || len(rp.bodies) != tc.calls || m.Attempts != tc.calls {
					t.Errorf("run %s %s (%s) after %d calls (%d attempts); want %s after %d", run.Status, e.Code, e.Message, len(rp.bodies), m.Attempts, tc.code, tc.calls)
				}
				if m.Refusal != tc.refusal || m.Partial != tc.partial || !strings.Contains(e.Message, tc.messageNaming) {
					t.Errorf("meta refusal %q, partial %q, message %q", m.Refusal, m.Partial, e.Message)
				}
				if got := sentLimit(rp.bodies[0]); got != 2048 {
					t.Errorf("the request's output limit is %v, want terminal_state's 2048", got)
				}
			})
		}
	}
}

// recordedRunner is a runner on one endpoint at baseURL, on the chat or the Responses wire.
func recordedRunner(t *testing.T, baseURL string, chat bool, mode string) *Runner {
	t.Helper()
	var client router.Streamer
	if chat {
		c := upstream.NewChat(upstream.ChatConfig{BaseURL: baseURL})
		t.Cleanup(c.CloseIdleConnections)
		client = c
	} else {
		c := upstream.New(upstream.Config{BaseURL: baseURL})
		t.Cleanup(c.CloseIdleConnections)
		client = c
	}
	r, err := router.New([]router.Endpoint{{ID: 1, Provider: "openai_compatible", Client: client, JSONMode: mode}}, router.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := Load(skills.New().JSON())
	if err != nil {
		t.Fatal(err)
	}
	return New(cat, r, &memRuns{}, Options{})
}

// sentLimit is the output limit a request carried, in whichever field its wire names it.
func sentLimit(body map[string]any) any {
	for _, k := range []string{"max_output_tokens", "max_tokens", "max_completion_tokens"} {
		if v, ok := body[k]; ok {
			return int(v.(float64))
		}
	}
	return nil
}
