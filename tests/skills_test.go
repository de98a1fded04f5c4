package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// skillRun is a run as the API answers it.
type skillRun struct {
	ID        string         `json:"id"`
	Skill     string         `json:"skill"`
	Status    string         `json:"status"`
	Locale    string         `json:"locale"`
	SourceID  string         `json:"source_id"`
	Output    map[string]any `json:"output"`
	Error     *struct{ Code, Message string }
	Duplicate bool `json:"duplicate"`
	Meta      struct {
		Attempts       int      `json:"attempts"`
		DecidedBy      string   `json:"decided_by"`
		WindowLines    []int    `json:"window_lines"`
		Provider       string   `json:"provider_detected"`
		OutputModeUsed string   `json:"output_mode_used"`
		Repaired       bool     `json:"repaired"`
		Refused        []string `json:"refused"`
		Language       string   `json:"reasoning_language"`
		LanguageRetry  bool     `json:"reasoning_language_retry_used"`
	} `json:"meta"`
}

func (r skillRun) code() string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// runSkill posts one run and returns it; it fails the test unless the answer is 200.
func (s *server) runSkill(token, skill, locale, sourceID string, input any) skillRun {
	s.t.Helper()
	var run skillRun
	resp := s.call(ctxFor(s.t, 60*time.Second), http.MethodPost, "/api/v1/skills/"+skill+"/runs", token,
		map[string]any{"input": input, "locale": locale, "source_id": sourceID}, &run)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("run %s: %d %s", skill, resp.StatusCode, readAllString(s.t, resp))
	}
	return run
}

const terminalQuestion = "⏺ Which approach do you prefer?\n  A) Enhance the existing React todo app\n  B) Start fresh\n\n❯ "

// postInput is a post_views input naming BTC.
func postInput(extra string) map[string]any {
	return map[string]any{"content_text": "Bitcoin breakout, buying more $BTC " + extra, "platform": "x", "posted_at": "2026-11-30T08:00:00Z",
		"assets": []any{map[string]any{"symbol": "BTC", "name": "Bitcoin", "market": "CRYPTO"}}}
}

// Each skill's happy path in both locales, on both stores, with the built-in upstream and
// with phaseflow mock-upstream on both wires, as the README runs them.
func TestSkillsOnEveryStoreAndUpstream(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		for _, up := range []struct{ name, env string }{
			{"built-in", "PHASEFLOW_UPSTREAM_URL="}, {"mock responses", "PHASEFLOW_UPSTREAM_WIRE=responses"}, {"mock chat", "PHASEFLOW_UPSTREAM_WIRE=chat"},
		} {
			t.Run(up.name, func(t *testing.T) {
				s := startServer(t, up.env)
				tok := s.token("skills-" + strings.ReplaceAll(up.name, " ", "-"))
				for _, locale := range []string{"en", "zh"} {
					run := s.runSkill(tok, "terminal_state", locale, "agent-"+locale, map[string]any{"terminal": terminalQuestion, "agent": "claude_code"})
					if run.Status != "succeeded" || run.Output["status"] != "has_question" || run.Locale != locale || run.Meta.DecidedBy != "model" {
						t.Errorf("terminal_state (%s): %+v", locale, run)
					}
					post := s.runSkill(tok, "post_views", locale, "", postInput(""))
					views, _ := post.Output["asset_views"].([]any)
					if post.Status != "succeeded" || len(views) != 1 || post.Output["as_of"] != "2026-11-30" || post.Meta.Language != "zh" {
						t.Errorf("post_views (%s): %+v", locale, post)
					}
					var got skillRun
					if resp := s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/skills/runs/"+post.ID, tok, nil, &got); resp.StatusCode != 200 || got.ID != post.ID {
						t.Errorf("GET the run: %d %+v", resp.StatusCode, got)
					}
				}
				var list struct {
					Runs []skillRun `json:"runs"`
				}
				s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/skills/runs?skill=terminal_state&limit=10", tok, nil, &list)
				if len(list.Runs) != 2 || list.Runs[0].Locale != "zh" {
					t.Errorf("listed runs: %+v", list.Runs)
				}
				if resp := s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/skills/runs/"+list.Runs[0].ID, s.token("someone-else"), nil, nil); resp.StatusCode != http.StatusNotFound {
					t.Errorf("another user's run: %d, want 404", resp.StatusCode)
				}
			})
		}
	})
}

func TestSkillFaultMarkers(t *testing.T) {
	s := startServer(t, "PHASEFLOW_SKILL_CALL_TIMEOUT=1s")
	tok := s.token("faults")
	cases := []struct {
		skill, marker, status, code string
		attempts                    int
	}{
		{"terminal_state", "[[fault:json_fenced]]", "succeeded", "", 1},
		{"terminal_state", "[[fault:json_invalid_once]]", "succeeded", "", 2},
		{"terminal_state", "[[fault:json_invalid]]", "failed", "skill_output_invalid", 2},
		{"terminal_state", "[[fault:schema_violation_once]]", "succeeded", "", 2},
		{"terminal_state", "[[fault:schema_violation]]", "failed", "skill_output_invalid", 2},
		{"post_views", "[[fault:english_reasoning_once]]", "succeeded", "", 2},
		{"post_views", "[[fault:english_reasoning]]", "failed", "reasoning_language_violation_after_retry", 2},
		{"terminal_state", "[[fault:stall]]", "failed", "upstream_timeout", 1},
		{"post_views", "[[fault:http_429]]", "failed", "rate_limited", 1},
	}
	for _, tc := range cases {
		t.Run(tc.skill+" "+tc.marker, func(t *testing.T) {
			var input any = map[string]any{"terminal": tc.marker + "\n" + terminalQuestion}
			if tc.skill == "post_views" {
				input = postInput(tc.marker)
			}
			began := time.Now()
			run := s.runSkill(tok, tc.skill, "en", "", input)
			if run.Status != tc.status || run.code() != tc.code || run.Meta.Attempts != tc.attempts {
				t.Errorf("status %s, code %q, attempts %d; want %s, %q, %d (%+v)", run.Status, run.code(), run.Meta.Attempts, tc.status, tc.code, tc.attempts, run)
			}
			if tc.marker == "[[fault:json_fenced]]" && !run.Meta.Repaired {
				t.Error("a fenced answer is not marked repaired")
			}
			if tc.code == "reasoning_language_violation_after_retry" && run.Output == nil {
				t.Error("the output of a run the language rule failed is not kept")
			}
			if tc.code == "upstream_timeout" && time.Since(began) > 5*time.Second {
				t.Errorf("a stalled call took %s, the skill's timeout is 1s", time.Since(began))
			}
		})
	}
}

// recordedSnapshots are the terminal snapshot sizes, in lines, of the skill requests the
// mock upstream received.
func (s *server) recordedSnapshots(t *testing.T) []int {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(s.mockURL, "/v1") + "/_scripted/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rec struct {
		Requests []struct {
			Body struct {
				Input []struct{ Content string } `json:"input"`
			} `json:"body"`
		} `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, r := range rec.Requests {
		for _, in := range r.Body.Input {
			if _, rest, ok := strings.Cut(in.Content, "<terminal>\n"); ok {
				snap, _, _ := strings.Cut(rest, "\n</terminal>")
				out = append(out, strings.Count(snap, "\n")+1)
			}
		}
	}
	return out
}

func TestSkillWideningAsTheUpstreamSawIt(t *testing.T) {
	s := startServer(t)
	tok := s.token("widen")
	var screen strings.Builder
	for i := range 210 {
		fmt.Fprintf(&screen, "⏺ step %d of the plan\n", i+1)
	}
	// An open question: the rules leave it to the model (a [y/n] one they read themselves).
	screen.WriteString("[[fault:context_incomplete_below:200]] Shall I go ahead with this plan?\n\n❯ ")
	run := s.runSkill(tok, "terminal_state", "en", "", map[string]any{"terminal": screen.String()})
	want := []int{80, 150, 213}
	if fmt.Sprint(run.Meta.WindowLines) != fmt.Sprint(want) || fmt.Sprint(s.recordedSnapshots(t)) != fmt.Sprint(want) || run.Meta.Attempts != 3 {
		t.Errorf("window_lines %v, the upstream saw %v, %d calls; want %v", run.Meta.WindowLines, s.recordedSnapshots(t), run.Meta.Attempts, want)
	}
	busy := s.runSkill(tok, "terminal_state", "en", "", map[string]any{"terminal": "⏺ Reading\n\n✶ Brewing… (3s · esc to interrupt)\n\n❯ "})
	if busy.Output["status"] != "processing" || busy.Meta.Attempts != 0 || busy.Meta.DecidedBy != "rules" || len(s.recordedSnapshots(t)) != 3 {
		t.Errorf("a busy agent: %+v, upstream requests %d", busy, len(s.recordedSnapshots(t)))
	}
}

// Two replicas on one database: the second hears a question the first already reported
// as a duplicate, and a new one as new.
func TestSkillDuplicatesAcrossReplicas(t *testing.T) {
	a := startServer(t)
	b := startServer(t, "PHASEFLOW_DATABASE_URL="+a.dsn)
	tok := a.token("dedup")
	first := a.runSkill(tok, "terminal_state", "en", "laptop-tmux", map[string]any{"terminal": terminalQuestion})
	again := b.runSkill(tok, "terminal_state", "en", "laptop-tmux", map[string]any{"terminal": "some output above\n" + terminalQuestion})
	other := b.runSkill(tok, "terminal_state", "en", "laptop-tmux", map[string]any{"terminal": "⏺ Shall I push to main? [y/n]\n\n❯ "})
	elsewhere := a.runSkill(tok, "terminal_state", "en", "server-tmux", map[string]any{"terminal": terminalQuestion})
	if first.Duplicate || !again.Duplicate || other.Duplicate || elsewhere.Duplicate {
		t.Errorf("duplicate: first %v, again %v, a new question %v, another source %v; want false, true, false, false",
			first.Duplicate, again.Duplicate, other.Duplicate, elsewhere.Duplicate)
	}
}

// jobView is a job as the API answers it.
type jobView struct {
	JobID     string    `json:"job_id"`
	Status    string    `json:"status"`
	Total     int       `json:"total"`
	Done      int       `json:"done"`
	Succeeded int       `json:"succeeded"`
	Runs      []*string `json:"runs"`
	EventsURL string    `json:"events_url"`
	Token     string    `json:"stream_token"`
}

func (s *server) postJob(token string, n int, extra string) jobView {
	s.t.Helper()
	inputs := make([]any, n)
	for i := range inputs {
		inputs[i] = postInput(fmt.Sprintf("post %d %s", i, extra))
	}
	var j jobView
	if resp := s.call(ctxFor(s.t, 30*time.Second), http.MethodPost, "/api/v1/skills/post_views/jobs", token, map[string]any{"inputs": inputs}, &j); resp.StatusCode != http.StatusAccepted {
		s.t.Fatalf("post job: %d %s", resp.StatusCode, readAllString(s.t, resp))
	}
	return j
}

// jobEvents reads a job's event stream to its end, resuming after lastID; nil on 204.
func (s *server) jobEvents(t *testing.T, j jobView, lastID int64) []sseEvent {
	t.Helper()
	st := s.openEvents(ctxFor(t, 60*time.Second), j.EventsURL+"?stream_token="+j.Token, lastID)
	if st.resp.StatusCode == http.StatusNoContent {
		st.close()
		return nil
	}
	return logged(st.readAll(t))
}

func TestSkillJobProgressAndResume(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("jobs")
		j := s.postJob(tok, 6, "")
		evs := s.jobEvents(t, j, 0)
		if len(evs) != 7 || evs[6].Name != "completed" || evs[6].ID != 7 || evs[5].Data["done"] != 6.0 {
			t.Fatalf("events %+v", evs)
		}
		for i, ev := range evs[:6] {
			if ev.Name != "progress" || ev.ID != int64(i+1) || ev.Data["total"] != 6.0 {
				t.Errorf("event %d: %+v", i, ev)
			}
		}
		if rest := s.jobEvents(t, j, 4); len(rest) != 3 || rest[0].ID != 5 {
			t.Errorf("resumed after 4: %+v", rest)
		}
		if none := s.jobEvents(t, j, 7); none != nil {
			t.Errorf("past the end: %+v, want 204", none)
		}
		var got jobView
		s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/skills/jobs/"+j.JobID, tok, nil, &got)
		if got.Status != "completed" || got.Done != 6 || len(got.Runs) != 6 || got.Runs[5] == nil {
			t.Errorf("job %+v", got)
		}
		if resp := s.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/skills/jobs/"+j.JobID+"/cancel", tok, nil, nil); resp.StatusCode != http.StatusConflict {
			t.Errorf("cancel an ended job: %d, want 409", resp.StatusCode)
		}
	})
}

// A job's replica is SIGKILLed mid-job; the other replica takes the job over when the lease
// runs out and finishes it, no input run to completion twice.
func TestSkillJobSurvivesAKilledReplica(t *testing.T) {
	env := []string{"PHASEFLOW_LEASE_TTL=2s", "PHASEFLOW_SKILL_JOB_CONCURRENCY=2"}
	a := startServer(t, env...)
	b := startServer(t, append(env, "PHASEFLOW_DATABASE_URL="+a.dsn)...)
	tok := a.token("killed")
	j := a.postJob(tok, 16, "[[pace_ms:40]]")
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got jobView
		a.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/skills/jobs/"+j.JobID, tok, nil, &got)
		if got.Done >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not start: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := a.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.proc.done
	evs := b.jobEvents(t, j, 0)
	if n := len(evs); n != 17 || evs[16].Name != "completed" {
		t.Fatalf("%d events through the other replica, last %+v", n, evs[n-1])
	}
	var got jobView
	b.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/skills/jobs/"+j.JobID, tok, nil, &got)
	seen := map[string]bool{}
	for _, id := range got.Runs {
		if id != nil {
			seen[*id] = true
		}
	}
	if got.Status != "completed" || got.Done != 16 || len(seen) != 16 {
		t.Errorf("job %+v with %d distinct runs", got, len(seen))
	}
	var runs struct {
		Runs []skillRun `json:"runs"`
	}
	b.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/skills/runs?skill=post_views&limit=100", tok, nil, &runs)
	if len(runs.Runs) != 16 {
		t.Errorf("%d runs stored for 16 inputs", len(runs.Runs))
	}
}

func TestSkillBadInputAndLimits(t *testing.T) {
	s := startServer(t, "PHASEFLOW_MAX_BODY_BYTES=4194304")
	tok := s.token("limits")
	ctx := ctxFor(t, 30*time.Second)
	cases := []struct {
		name, path string
		body       any
		status     int
		code, says string
	}{
		{"a missing field", "/api/v1/skills/terminal_state/runs", map[string]any{"input": map[string]any{"agent": "codex"}}, 400, "invalid_input", "'terminal'"},
		{"a mistyped field", "/api/v1/skills/post_views/runs", map[string]any{"input": map[string]any{"content_text": 7}}, 400, "invalid_input", "/content_text"},
		{"an unknown skill", "/api/v1/skills/summarise/runs", map[string]any{"input": map[string]any{}}, 404, "unknown_skill", ""},
		{"a snapshot over 1 MiB", "/api/v1/skills/terminal_state/runs", map[string]any{"input": map[string]any{"terminal": strings.Repeat("x", 1<<20+1)}}, 413, "input_too_large", "/terminal"},
		{"a bad input in a job", "/api/v1/skills/post_views/jobs", map[string]any{"inputs": []any{postInput(""), map[string]any{"lang": "en"}}}, 400, "invalid_input", "inputs[1]"},
		{"a job of 1001 inputs", "/api/v1/skills/post_views/jobs", map[string]any{"inputs": make([]any, 1001)}, 400, "invalid_input", "1 to 1000"},
		{"a job of none", "/api/v1/skills/post_views/jobs", map[string]any{"inputs": []any{}}, 400, "invalid_input", ""},
		{"an unsupported locale", "/api/v1/skills/post_views/runs", map[string]any{"input": postInput(""), "locale": "fr"}, 400, "unsupported_locale", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e struct {
				Error struct{ Code, Message string }
			}
			resp := s.call(ctx, http.MethodPost, tc.path, tok, tc.body, &e)
			if resp.StatusCode != tc.status || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.says) {
				t.Errorf("%d %+v; want %d %s naming %q", resp.StatusCode, e.Error, tc.status, tc.code, tc.says)
			}
		})
	}
}

// phaseflow watch on a command's output prints one line per new question: none for a
// screen with no question, none for the same question again (in another screen), one for
// a new one; and POSTs each to --notify-url.
func TestWatchPrintsOneLinePerNewQuestion(t *testing.T) {
	dir := t.TempDir()
	screen := filepath.Join(dir, "screen.txt")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(screen, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var notes []string
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		notes = append(notes, r.Header.Get("Content-Type")+"|"+string(b))
		mu.Unlock()
	}))
	t.Cleanup(ntfy.Close)
	write("$ phaseflow is starting\n")
	w := launch(t, []string{"PHASEFLOW_DATA_DIR=" + dir, "PHASEFLOW_DATABASE_URL=", "PHASEFLOW_UPSTREAM_URL="},
		"watch", "--command", "cat "+screen, "--every", "100ms", "--source-id", "agent-tmux", "--notify-url", ntfy.URL)
	lines := make(chan string, 16)
	go func() {
		for l := range w.lines {
			lines <- l
		}
		close(lines)
	}()
	steps := []struct {
		screen string
		line   bool
	}{
		{terminalQuestion, true},
		{"scrolled output\n" + terminalQuestion, false},
		{"⏺ Done.\n\n✶ Brewing… (2s · esc to interrupt)\n", false},
		{"⏺ Shall I push it to main? [y/n]\n\n❯ ", true},
	}
	for i, st := range steps {
		write(st.screen)
		select {
		case l := <-lines:
			if !st.line {
				t.Fatalf("step %d: a line for a screen with no new question: %s", i, l)
			}
			var q struct{ SourceID, Message, Fingerprint string }
			if err := json.Unmarshal([]byte(l), &q); err != nil || q.Message == "" || q.Fingerprint == "" {
				t.Errorf("step %d: line %s (%v)", i, l, err)
			}
		case <-time.After(2 * time.Second):
			if st.line {
				t.Fatalf("step %d: no line for a new question; stderr:\n%s", i, w.stderr.String())
			}
		}
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := len(notes)
		mu.Unlock()
		if n >= 2 {
			break // the POST follows the printed line
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != 2 || !strings.HasPrefix(notes[0], "text/plain") || !strings.Contains(notes[1], "push it to main") {
		t.Errorf("notifications %q", notes)
	}
}

// The command line runs a skill with the server's configuration and says by its exit
// status how the run went.
func TestSkillRunCommand(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "snap.txt")
	if err := os.WriteFile(snap, []byte(terminalQuestion), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PHASEFLOW_DATA_DIR=" + dir, "PHASEFLOW_DATABASE_URL=", "PHASEFLOW_UPSTREAM_URL="}
	cases := []struct {
		name string
		args []string
		exit int
		out  string
	}{
		{"a question", []string{"skill", "run", "terminal_state", "--terminal", snap, "--locale", "zh"}, 0, `"has_question"`},
		{"a failed run", []string{"skill", "run", "post_views", "--input", "-"}, 1, `"reasoning_language_violation_after_retry"`},
		{"a bad input", []string{"skill", "run", "terminal_state", "--input", "-"}, 2, ""},
		{"no skill named", []string{"skill", "run", "--input", "-"}, 2, ""},
		{"the list", []string{"skill", "list"}, 0, "terminal_state\tv2\ten,zh"},
	}
	stdin := map[string]string{"a failed run": `{"content_text":"x [[fault:english_reasoning]]"}`, "a bad input": `{"agent":"codex"}`}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, env, stdin[tc.name], tc.args...)
			if code != tc.exit || !strings.Contains(out, tc.out) {
				t.Errorf("exit %d, output %s; want %d with %q", code, out, tc.exit, tc.out)
			}
		})
	}
}

// runCLI runs the binary to its end with stdin and returns its stdout and exit status.
func runCLI(t *testing.T, env []string, stdin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out strings.Builder
	cmd.Stdout = &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(interface{ ExitCode() int }); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}
