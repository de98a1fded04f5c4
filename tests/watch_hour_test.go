package tests

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// segment is a stretch of a recorded session: what the pane shows for how long (in the
// session's seconds), and whether it is a new question a person must be told of.
type segment struct {
	name    string
	seconds int
	frame   func(s int) string // the screen s seconds into the segment
	asks    bool
}

// hourCompression plays a session's second in this many milliseconds: an hour in two
// minutes, and the watcher's --every 100ms is its default 3s.
const hourCompression = 1000 / 30

// anHourOfClaudeCode is an hour of work in Claude Code as the corpus shows its screens:
// stretches of work between seven waits (three approvals of commands, an edit, a menu, two
// questions in prose, one of them while the user types a reply), and an idle spell.
func anHourOfClaudeCode() []segment {
	busy := func(reply string) func(int) string {
		return func(s int) string {
			frames := []string{"✢", "✳", "✶", "✻", "✽"}
			return "⏺ " + reply + "\n\n" + frames[s%len(frames)] + " Enchanting… (ctrl+c to interrupt · " +
				fmt.Sprintf("%dm %ds", s/60, s%60) + " · ↓ 3.1k tokens)\n" + rule() + "\n❯\n" + rule() + "\n"
		}
	}
	still := func(screen string) func(int) string { return func(int) string { return screen } }
	prose := func(q, typed string) func(int) string {
		return func(s int) string {
			input := ""
			if s > 60 && typed != "" {
				input = " " + typed[:min(len(typed), (s-60)/3)]
			}
			return "⏺ " + q + "\n  A) Keep the current schema\n  B) Add a migration\n\n" + rule() + "\n❯" + input + "\n" + rule() + "\n"
		}
	}
	menu := "⏺ Here is the plan: three steps, tests first.\n\nWould you like to proceed?\n\n❯ 1. Yes, and auto-accept edits\n" +
		"  2. Yes, and manually approve edits\n  3. No, keep planning\n"
	edit := "⏺ Update(src/app.ts)\n\nDo you want to make this edit to src/app.ts?\n❯ 1. Yes\n" +
		"  2. Yes, allow all edits during this session (shift+tab)\n  3. No, and tell Claude what to do differently (esc)\n"
	idle := "⏺ All done: the tests pass.\n\n✻ Brewed for 8m 0s\n\n" + rule() + "\n❯\n" + rule() + "\n"
	return []segment{
		{"reading the project", 300, busy("Reading the project."), false},
		{"a plan to approve", 60, still(menu), true},
		{"writing tests", 420, busy("Writing the tests."), false},
		{"run npm test?", 20, still(claudeBash("npm test")), true},
		{"fixing", 240, busy("Fixing the failing test."), false},
		{"a question, answered while typed", 120, prose("Which schema should the users table keep?", "keep the current one"), true},
		{"migrating", 600, busy("Writing the migration."), false},
		{"run git status?", 15, still(claudeBash("git status")), true},
		{"reviewing", 180, busy("Reviewing the diff."), false},
		{"run git commit?", 30, still(claudeBash(`git commit -m "Add the users migration"`)), true},
		{"refactoring", 300, busy("Refactoring the handlers."), false},
		{"an edit to approve", 45, still(edit), true},
		{"finishing", 480, busy("Running the whole suite."), false},
		{"idle", 300, still(idle), false},
		{"a new task", 120, busy("Looking at the logs."), false},
		{"another question", 60, prose("Should the log rotation keep a week or a month?", ""), true},
		{"working on it", 310, busy("Configuring the rotation."), false},
	}
}

func rule() string { return strings.Repeat("─", 60) }

// An hour of agent work played in a real tmux pane, compressed, through the watcher: one
// notification per wait, none while the agent works, and what it cost (the model calls,
// the time from a question on screen to its notification), logged for the docs.
func TestWatchARecordedHour(t *testing.T) {
	if testing.Short() {
		t.Skip("plays an hour of work in two minutes")
	}
	ts := newTmux(t)
	_, mockURL := start(t, "PHASEFLOW_UPSTREAM_URL=", nil, "mock-upstream", "--addr", "127.0.0.1:0", "--pace", "0")
	target, err := url.Parse(strings.TrimSuffix(mockURL, "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	var seen sync.Map // the first line of each screen the model was asked to read
	proxy := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		text := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(body)) // JSON escapes them
		_, screen, _ := strings.Cut(text, `<terminal>\n`)
		first, _, _ := strings.Cut(screen, `\n`)
		seen.Store(first, true)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(counting.Close)
	var mu sync.Mutex
	var shownAt time.Time
	var segName string
	var latencies []time.Duration
	var notes []string
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		notes = append(notes, segName+": "+strings.SplitN(string(b), "\n", 2)[0])
		latencies = append(latencies, time.Since(shownAt))
		mu.Unlock()
	}))
	t.Cleanup(ntfy.Close)
	segments := anHourOfClaudeCode()
	ts.show(segments[0].frame(0))
	w := launch(t, []string{"PHASEFLOW_DATA_DIR=" + t.TempDir(), "PHASEFLOW_DATABASE_URL=", "PHASEFLOW_UPSTREAM_URL=" + counting.URL + "/v1"},
		"watch", "--command", ts.capture(), "--every", "100ms", "--notify-url", ntfy.URL)
	tick := time.Duration(hourCompression) * time.Millisecond * 3 // three of the session's seconds a frame
	began, want := time.Now(), 0
	for _, seg := range segments {
		mu.Lock()
		segName, shownAt = seg.name, time.Now()
		mu.Unlock()
		if seg.asks {
			want++
		}
		last := ""
		for s := 0; s < seg.seconds; s += 3 {
			if f := seg.frame(s); f != last {
				ts.show(f)
				last = f
			}
			time.Sleep(tick)
		}
	}
	time.Sleep(time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(notes) != want {
		t.Fatalf("%d notifications for %d waits: %q\nstderr:\n%s", len(notes), want, notes, w.stderr.String())
	}
	for i, n := range notes {
		if strings.Contains(n, "working") || strings.Contains(n, "ing the") {
			t.Errorf("notification %d came while the agent worked: %s", i, n)
		}
	}
	var read []string
	seen.Range(func(k, _ any) bool { read = append(read, k.(string)); return true })
	t.Logf("screens the model read: %q", read)
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	t.Logf("an hour of Claude Code in %v: %d notifications, %d model calls; a question's notification after %v (median), %v (slowest), at --every 100ms",
		time.Since(began).Round(time.Second), len(notes), calls.Load(), latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond))
}
