package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Answering a watched agent from the phone, end to end: phaseflow serve, phaseflow watch
// --server on a real tmux server whose panes play an agent that asks and then prints the
// key it read, and a local receiver in ntfy's place.

// askingAgent plays Claude Code asking to run command, in the dialog box a user pasted from
// a real session (https://github.com/atxtechbro/dotfiles/issues/1294, the corpus's
// claude_code/16), reads one key and prints it.
const askingAgent = `#!/bin/sh
clear
printf '│ Bash command                                                    │\n'
printf '│                                                                 │\n'
printf '│   %-62s│\n' "$1"
printf '│   Check for slugify script in correct dotfiles location         │\n'
printf '│                                                                 │\n'
printf '│ Do you want to proceed?                                         │\n'
printf '│ ❯ 1. Yes                                                        │\n'
printf '│   2. No, and tell Claude what to do differently (esc)           │\n'
stty -icanon -echo
key=$(dd bs=1 count=1 2>/dev/null)
clear
printf 'read: %s\n' "$key"
exec sleep 600
`

// answerRig is a server, a tmux server of panes playing askingAgent, and a receiver of the
// notifications.
type answerRig struct {
	t      *testing.T
	s      *server
	tok    string
	socket string
	mu     sync.Mutex
	notes  []http.Header
}

func newAnswerRig(t *testing.T, extraEnv ...string) *answerRig {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set and tmux is missing (apt-get install tmux)")
		}
		t.Skip("tmux is missing (apt-get install tmux)")
	}
	r := &answerRig{t: t, s: startServer(t, extraEnv...), socket: fmt.Sprintf("pfa-%d-%d", os.Getpid(), time.Now().UnixNano())}
	r.tok = r.s.token("ann")
	t.Cleanup(func() { exec.Command("tmux", "-L", r.socket, "kill-server").Run() }) //nolint:errcheck // may be gone
	return r
}

// receiver starts the notification receiver and returns its URL.
func (r *answerRig) receiver() string {
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.notes = append(r.notes, req.Header.Clone())
		r.mu.Unlock()
	}))
	r.t.Cleanup(ntfy.Close)
	return ntfy.URL
}

// pane starts a pane (a tmux session of that name) whose agent asks to run command.
func (r *answerRig) pane(name, command string) {
	r.t.Helper()
	script := filepath.Join(r.t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte(askingAgent), 0o700); err != nil {
		r.t.Fatal(err)
	}
	args := []string{"-L", r.socket, "-f", "/dev/null"}
	if out, err := exec.Command("tmux", append(args, "has-session")...).CombinedOutput(); err != nil && !strings.Contains(string(out), "no server") && !strings.Contains(string(out), "error connecting") {
		r.t.Fatalf("tmux: %v %s", err, out)
	}
	if out, err := exec.Command("tmux", append(args, "new-session", "-d", "-s", name, "-x", "100", "-y", "30", script+" "+shellQuote(command))...).CombinedOutput(); err != nil {
		r.t.Fatalf("tmux new-session: %v: %s", err, out)
	}
}

// screen is what pane name shows.
func (r *answerRig) screen(name string) string {
	out, _ := exec.Command("tmux", "-L", r.socket, "capture-pane", "-p", "-t", name).Output()
	return string(out)
}

// waitScreen waits until pane name shows want, and says how long that took.
func (r *answerRig) waitScreen(name, want string, within time.Duration) time.Duration {
	r.t.Helper()
	start := time.Now()
	for !strings.Contains(r.screen(name), want) {
		if time.Since(start) > within {
			r.t.Fatalf("pane %s does not show %q within %v:\n%s", name, want, within, r.screen(name))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// watch starts phaseflow watch --server with args.
func (r *answerRig) watch(args ...string) *proc {
	return launch(r.t, nil, append([]string{"watch", "--server", r.s.base, "--token", r.tok, "--every", "1s"}, args...)...)
}

// note waits for the n-th notification (from 1) and returns its headers.
func (r *answerRig) note(n int) http.Header {
	r.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r.mu.Lock()
		if len(r.notes) >= n {
			h := r.notes[n-1]
			r.mu.Unlock()
			return h
		}
		r.mu.Unlock()
	}
	r.t.Fatalf("no notification %d within 30s", n)
	return nil
}

// actionURLs are the URLs of a notification's ntfy actions, in order.
func actionURLs(h http.Header) []string {
	var out []string
	for _, m := range regexp.MustCompile(`http, "[^"]*", (\S+), method=POST`).FindAllStringSubmatch(h.Get("Actions"), -1) {
		out = append(out, m[1])
	}
	return out
}

// post posts to url as ntfy's action does (no body) and returns the status.
func post(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Post(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The loop: the notification's action answers, the pane gets the key within two seconds
// at --every 1s and goes on; the same action again is 410; the page says the answer was
// typed.
func TestAnswerFromTheNotification(t *testing.T) {
	r := newAnswerRig(t)
	notify := r.receiver()
	r.pane("agentA", "ls /srv/projects | head -3")
	r.watch("--command", "tmux -L "+r.socket+" capture-pane -p -t agentA", "--notify-url", notify)
	h := r.note(1)
	urls := actionURLs(h)
	if len(urls) != 2 || h.Get("Click") == "" || !strings.Contains(h.Get("Actions"), `"Yes"`) {
		t.Fatalf("the notification's Click %q and Actions %q", h.Get("Click"), h.Get("Actions"))
	}
	if st := post(t, urls[0]); st != http.StatusOK {
		t.Fatalf("the Yes action = %d", st)
	}
	if took := r.waitScreen("agentA", "read: 1", 10*time.Second); took > 2*time.Second {
		t.Errorf("the key reached the pane %v after the answer, want within 2s", took)
	}
	if st := post(t, urls[0]); st != http.StatusGone {
		t.Errorf("the same action again = %d, want 410", st)
	}
	page := getPage(t, h.Get("Click"))
	if !strings.Contains(page, "state-delivered") || !strings.Contains(page, "Yes") {
		t.Errorf("the answer page after delivery:\n%s", page)
	}
}

// getPage is the answer page as a browser gets it.
func getPage(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// An answer given while the watcher is stopped is typed when it runs again; one given
// after the pane moved on (the person answered at the computer) is not typed, and the page
// says so.
func TestAnswersWhileTheWatcherSleeps(t *testing.T) {
	r := newAnswerRig(t)
	notify := r.receiver()
	r.pane("agentA", "ls /srv/a")
	r.pane("agentB", "ls /srv/b")
	w := r.watch("--panes", "agentA,agentB", "--tmux", "tmux -L "+r.socket, "--notify-url", notify)
	first, second := r.note(1), r.note(2)
	w.stop(t)
	byPane := map[string]http.Header{}
	for _, h := range []http.Header{first, second} {
		for _, p := range []string{"agentA", "agentB"} {
			if strings.Contains(h.Get("Title"), p) {
				byPane[p] = h
			}
		}
	}
	if len(byPane) != 2 {
		t.Fatalf("notifications %q and %q do not name the two panes", first.Get("Title"), second.Get("Title"))
	}
	if st := post(t, actionURLs(byPane["agentA"])[0]); st != http.StatusOK {
		t.Fatalf("answering A = %d", st)
	}
	if st := post(t, actionURLs(byPane["agentB"])[1]); st != http.StatusOK {
		t.Fatalf("answering B = %d", st)
	}
	exec.Command("tmux", "-L", r.socket, "send-keys", "-t", "agentB", "x").Run() //nolint:errcheck // checked below
	r.waitScreen("agentB", "read: x", 5*time.Second)                             // answered at the computer

	r.watch("--panes", "agentA,agentB", "--tmux", "tmux -L "+r.socket, "--notify-url", notify)
	r.waitScreen("agentA", "read: 1", 15*time.Second)
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(getPage(t, byPane["agentB"].Get("Click")), "state-stale"); {
		if time.Now().After(deadline) {
			t.Fatalf("B's answer is not reported stale:\n%s", getPage(t, byPane["agentB"].Get("Click")))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Contains(r.screen("agentB"), "2") {
		t.Errorf("a stale answer was typed into B:\n%s", r.screen("agentB"))
	}
}

// One watcher follows two panes; each gets its own answer.
func TestOneWatcherManyPanes(t *testing.T) {
	r := newAnswerRig(t)
	notify := r.receiver()
	r.pane("alpha", "make test") // not "left" and "right": tmux reads those as pane positions
	r.pane("beta", "make lint")
	w := r.watch("--panes", "all", "--tmux", "tmux -L "+r.socket, "--notify-url", notify)
	defer func() {
		if t.Failed() {
			t.Logf("watcher: %s", w.stderr.String())
		}
	}()
	for _, h := range []http.Header{r.note(1), r.note(2)} {
		option := 0 // alpha: Yes (1)
		if strings.Contains(h.Get("Title"), "beta") {
			option = 1 // beta: No (2)
		}
		if st := post(t, actionURLs(h)[option]); st != http.StatusOK {
			t.Fatalf("answering %q = %d", h.Get("Title"), st)
		}
	}
	r.waitScreen("alpha", "read: 1", 10*time.Second)
	r.waitScreen("beta", "read: 2", 10*time.Second)
}

// The answer page in Chromium on a phone's width: the question with its options as
// buttons, in the watcher's locale; a tap answers, the key reaches the pane, and the page
// then says so. The page works without JavaScript: it has none.
func TestAnswerPageInChromium(t *testing.T) {
	browser, err := findChromium()
	if err != nil {
		noBrowser(t, "no Chromium found: %v", err)
	}
	for _, tc := range []struct{ locale, title, delivered string }{
		{"en", "Answer your coding agent", "Typed into the terminal that asked."},
		{"zh", "回复你的编程代理", "已输入到提问的终端。"},
	} {
		t.Run(tc.locale, func(t *testing.T) {
			r := newAnswerRig(t)
			notify := r.receiver()
			r.pane("agent", "git push --force")
			r.watch("--command", "tmux -L "+r.socket+" capture-pane -p -t agent", "--notify-url", notify, "--locale", tc.locale)
			tab := newBrowser(t, browser)
			ctx, cancel := context.WithTimeout(tab, time.Minute)
			defer cancel()
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(r.note(1).Get("Click")),
				chromedp.WaitVisible(`button[value="0"]`)); err != nil {
				t.Fatalf("open the answer page: %v", err)
			}
			title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.title + "|" + document.documentElement.lang`))
			if err != nil || title != tc.title+"|"+tc.locale {
				t.Errorf("the page's title and language = %q, %v", title, err)
			}
			fits, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth <= 390`))
			if err != nil || !fits {
				t.Errorf("the page is wider than 390 px: %v", err)
			}
			if err := chromedp.Do(ctx, chromedp.Click(`button[value="0"]`), chromedp.WaitVisible(`.state`)); err != nil {
				t.Fatalf("tap Yes: %v", err)
			}
			r.waitScreen("agent", "read: 1", 10*time.Second)
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`.state`)); err != nil {
					t.Fatal(err)
				}
				state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.state').textContent`))
				if err == nil && state == tc.delivered {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the page says %q, %v; want %q", state, err, tc.delivered)
				}
			}
		})
	}
}

// An answer link answers one question of its user's, once: a forged link is 401, a link
// for another user's question 404, a used one 410; answers are limited per user; links
// never reach the server's log or its metrics.
func TestAnswerLinksAreTheirQuestionsOnly(t *testing.T) {
	s := startServer(t)
	tok := s.token("ann")
	ctx := ctxFor(t, 30*time.Second)
	var rec struct {
		Question  struct{ ID string } `json:"question"`
		New       bool                `json:"new"`
		AnswerURL string              `json:"answer_url"`
		Actions   []struct{ URL string }
	}
	q := map[string]any{"source_id": "laptop:0.0", "fingerprint": "f1", "message": "Proceed?", "message_type": "confirmation",
		"options": []any{map[string]any{"label": "Yes", "keys": []string{"y"}}, map[string]any{"label": "No", "keys": []string{"n"}}}}
	if resp := s.call(ctx, http.MethodPost, "/api/v1/watch/questions", tok, q, &rec); resp.StatusCode != http.StatusCreated || !rec.New {
		t.Fatalf("record = %d %+v", resp.StatusCode, rec)
	}
	var again struct{ New bool }
	if resp := s.call(ctx, http.MethodPost, "/api/v1/watch/questions", tok, q, &again); resp.StatusCode != http.StatusOK || again.New {
		t.Errorf("the same question recorded again = %d, new %v; want 200 and not new", resp.StatusCode, again.New)
	}
	token := rec.AnswerURL[strings.LastIndex(rec.AnswerURL, "/")+1:]
	forged := s.base + "/answer/" + token[:len(token)-6] + "AAAAAA"
	bob, err := s.auth.SignAnswer("bob", rec.Question.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, url string
		want      int
	}{ // in this order: the answer before its second use
		{"forged", forged + "?option=0", http.StatusUnauthorized},
		{"another user's", s.base + "/answer/" + bob + "?option=0", http.StatusNotFound},
		{"an option not there", rec.AnswerURL + "?option=7", http.StatusBadRequest},
		{"the answer", rec.Actions[0].URL, http.StatusOK},
		{"used again", rec.Actions[1].URL, http.StatusGone},
	} {
		if got := post(t, c.url); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	var answers int
	for range 15 {
		if post(t, rec.Actions[0].URL) == http.StatusTooManyRequests {
			answers++
		}
	}
	if answers == 0 {
		t.Error("15 answers in a row were never limited")
	}
	metrics := getPage(t, s.base+"/metrics")
	if strings.Contains(s.proc.stderr.String(), token[len(token)-20:]) || strings.Contains(metrics, token[len(token)-20:]) {
		t.Error("an answer token reached the server's log or metrics")
	}
	if !strings.Contains(metrics, `phaseflow_watch_questions_total{event="answered"} 1`) {
		t.Errorf("the metrics do not count the answer:\n%s", grepLines(metrics, "phaseflow_watch_questions_total"))
	}
}

// grepLines are the lines of text that hold s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
