package tests

import (
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

// tmuxServer is a tmux server of the test's own (its own socket), with one pane that
// plays screens.
type tmuxServer struct {
	t      *testing.T
	socket string
	dir    string
	frames int
}

// newTmux starts a tmux server with a pane "agent" of 120 by 40 that draws each screen
// shown in one write; without tmux the test skips on a
// developer's machine and fails in CI (.ci/run installs it).
func newTmux(t *testing.T) *tmuxServer {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set and tmux is missing (apt-get install tmux)")
		}
		t.Skip("tmux is missing (apt-get install tmux)")
	}
	ts := &tmuxServer{t: t, socket: fmt.Sprintf("pf-%d-%d", os.Getpid(), time.Now().UnixNano()), dir: t.TempDir()}
	// Each screen overwrites the last in place (cursor home, each line then erase to its
	// end, erase below), as Ink and ratatui redraw, so nothing of it scrolls into history.
	draw := `cd ` + ts.dir + `; e=$(printf '\033'); while :; do if [ -e next ]; then mv next cur; ` +
		`out=$(printf '%s[H' "$e"; sed "s/\$/$e[K/" cur; printf '%s[J' "$e"); printf '%s' "$out"; fi; sleep 0.02; done`
	ts.tmux("new-session", "-d", "-s", "agent", "-x", "120", "-y", "40", "sh -c "+shellQuote(draw))
	t.Cleanup(func() { exec.Command("tmux", "-L", ts.socket, "kill-server").Run() }) //nolint:errcheck // the server may be gone already
	return ts
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (ts *tmuxServer) tmux(args ...string) string {
	ts.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", ts.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		ts.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// show has the pane draw screen (it does within a few tens of milliseconds).
func (ts *tmuxServer) show(screen string) {
	ts.t.Helper()
	ts.frames++
	f := filepath.Join(ts.dir, fmt.Sprintf("frame-%d", ts.frames))
	if err := os.WriteFile(f, []byte(screen), 0o600); err != nil {
		ts.t.Fatal(err)
	}
	if err := os.Rename(f, filepath.Join(ts.dir, "next")); err != nil {
		ts.t.Fatal(err)
	}
}

// capture is the watcher's command for the pane.
func (ts *tmuxServer) capture() string {
	return "tmux -L " + ts.socket + " capture-pane -p -t agent -S -800"
}

// claudeBash is Claude Code's approval of a bash command, laid out as the capture in
// agent-deck's TestClaudePromptDetector_NumberedMenuPermission.
func claudeBash(command string) string {
	return "⏺ Bash(" + command + ")\n\nBash command\n\n  " + command + "\n  Look at the files\n\nDo you want to proceed?\n" +
		"> 1.  Yes\n  2.  No\n\nEsc to cancel · Tab to amend · ctrl+e to explain\n"
}

// claudeBusy is Claude Code at work, its timer at s seconds.
func claudeBusy(reply string, s int) string {
	return "⏺ " + reply + "\n\n✳ Enchanting… (ctrl+c to interrupt · " + fmt.Sprint(s) + "s · ↓ 3.1k tokens)\n" +
		strings.Repeat("─", 60) + "\n❯\n" + strings.Repeat("─", 60) + "\n"
}

// A session played in a real tmux pane: one notification per new question, none while the
// agent works, each naming what it asks approval for; the same question after other work
// is a new wait.
func TestWatchATmuxSession(t *testing.T) {
	ts := newTmux(t)
	var mu sync.Mutex
	type note struct {
		step        int
		title, body string
	}
	var notes []note
	step := 0
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		notes = append(notes, note{step, r.Header.Get("Title"), string(b)})
		mu.Unlock()
	}))
	t.Cleanup(ntfy.Close)
	ts.show(claudeBusy("Reading the project.", 1))
	w := launch(t, []string{"PHASEFLOW_DATA_DIR=" + t.TempDir(), "PHASEFLOW_DATABASE_URL=", "PHASEFLOW_UPSTREAM_URL="},
		"watch", "--command", ts.capture(), "--every", "100ms", "--notify-url", ntfy.URL)
	question := "⏺ Which approach do you prefer?\n  A) Enhance the existing React todo app\n  B) Start fresh\n\n❯\n"
	busy := func(reply string) []string {
		return []string{claudeBusy(reply, 1), claudeBusy(reply, 2), claudeBusy(reply, 3)}
	}
	steps := []struct {
		name    string
		screens []string
		notify  string // what the notification names; "" for none
	}{
		{"busy", busy("Reading the project."), ""},
		{"a question", []string{question}, "Which approach do you prefer?"},
		{"answered, busy", busy("Enhancing the app."), ""},
		{"an approval of ls", []string{claudeBash("ls -la")}, "ls -la"},
		{"an approval of find", []string{claudeBash(`find . -name "*.go"`)}, `find . -name "*.go"`},
		{"busy again", busy("Listing the sources."), ""},
		{"the first question again", []string{question}, "Which approach do you prefer?"},
		{"idle", []string{"⏺ Done: the app is enhanced.\n\n✻ Brewed for 3m 36s\n\n" + strings.Repeat("─", 60) + "\n❯\n" + strings.Repeat("─", 60) + "\n"}, ""},
	}
	for i, st := range steps {
		mu.Lock()
		step = i
		mu.Unlock()
		for _, screen := range st.screens {
			ts.show(screen)
			time.Sleep(400 * time.Millisecond)
		}
		time.Sleep(800 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var want []string
	for _, st := range steps {
		if st.notify != "" {
			want = append(want, st.notify)
		}
	}
	if len(notes) != len(want) {
		t.Fatalf("%d notifications, want %d: %+v\nstderr:\n%s\nstdout: %v", len(notes), len(want), notes, w.stderr.String(), drain(w.lines))
	}
	for k, n := range notes {
		if steps[n.step].notify == "" || !strings.Contains(n.body, want[k]) || !strings.HasPrefix(n.title, "Claude Code asks") ||
			!strings.Contains(n.title, "agent:0.0") {
			t.Errorf("notification %d during %q: %q %q; want it to name %q", k, steps[n.step].name, n.title, n.body, want[k])
		}
	}
}

// A capture that never ends is reported at its timeout; an interrupt ends the watch within
// a second, and nothing it started is left behind.
func TestWatchCannotBeStuck(t *testing.T) {
	const sleeper = "sleep 1013"
	// The tests' binary is built with the race detector, which sleeps a second at exit
	// unless told not to.
	w := launch(t, []string{"PHASEFLOW_DATA_DIR=" + t.TempDir(), "PHASEFLOW_DATABASE_URL=", "PHASEFLOW_UPSTREAM_URL=", "GORACE=atexit_sleep_ms=0"},
		"watch", "--command", sleeper+" & "+sleeper+"; wait", "--every", "100ms", "--capture-timeout", "1s")
	began := time.Now()
	for !strings.Contains(w.stderr.String(), "did not finish in time") {
		if time.Since(began) > 5*time.Second {
			t.Fatalf("no timeout reported after %v; stderr:\n%s", time.Since(began), w.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the timeout was reported after %v", time.Since(began))
	time.Sleep(300 * time.Millisecond) // a second capture is under way
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end after SIGINT")
	}
	if took := time.Since(stopped); took > time.Second {
		t.Errorf("the watch took %v to end after SIGINT", took)
	}
	if strings.Count(w.stderr.String(), "did not finish in time") != 1 {
		t.Errorf("the same failure reported more than once:\n%s", w.stderr.String())
	}
	time.Sleep(100 * time.Millisecond)
	if left := processesRunning(t, sleeper); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

// processesRunning lists the live processes whose command line contains s.
func processesRunning(t *testing.T, s string) []string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		cmdline, err := os.ReadFile(d + "/cmdline")
		if err != nil || !strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), s) {
			continue
		}
		if stat, err := os.ReadFile(d + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
			out = append(out, filepath.Base(d)+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}

// drain returns the lines a process printed so far.
func drain(lines chan string) []string {
	var out []string
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return out
			}
			out = append(out, l)
		default:
			return out
		}
	}
}
