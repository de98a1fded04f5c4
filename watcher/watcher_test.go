package watcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTailKeepsTheLastBytesFromALineStart(t *testing.T) {
	cases := []struct {
		name   string
		writes []string
		limit  int
		want   string
	}{
		{"short", []string{"a\nb\n"}, 16, "a\nb\n"},
		{"cut at a line start", []string{"line one\nline two\nline three\n"}, 16, "line three\n"},
		{"many small writes", []string{"1\n", "2\n", "3\n", "4\n", "5\n", "6\n"}, 5, "5\n6\n"},
		{"one write past the limit", []string{"xxxxxxxxxx\nend\n"}, 6, "end\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTail(tc.limit)
			for _, w := range tc.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := string(tl.Bytes()); got != tc.want {
				t.Errorf("Bytes = %q, want %q", got, tc.want)
			}
			if cap(tl.buf) > 2*tc.limit {
				t.Errorf("the buffer grew to %d bytes, past twice the limit", cap(tl.buf))
			}
		})
	}
}

// A command that hangs, with a child holding its output open, is killed whole at the
// timeout, and the watcher hears of it then.
func TestACaptureThatHangsIsKilledWhole(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "child.pid")
	began := time.Now()
	_, err := capture(t.Context(), "sleep 1031 & echo $! > "+marker+"; wait", 500*time.Millisecond, 1<<20)
	if !errors.Is(err, errTimeout) {
		t.Fatalf("err = %v, want the timeout", err)
	}
	if took := time.Since(began); took > 500*time.Millisecond+waitDelay+time.Second {
		t.Errorf("the timeout was reported after %v", took)
	}
	pid, rerr := os.ReadFile(marker)
	if rerr != nil {
		t.Fatal(rerr)
	}
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			break // gone, or a zombie waiting for init
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shell's child %s outlived the timeout", pid)
		}
	}
}

// A huge capture costs a bounded amount of memory: its last part is kept.
func TestAHugeCaptureKeepsItsLastPart(t *testing.T) {
	const limit = 1 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := capture(t.Context(), "head -c 100000000 /dev/zero | tr '\\0' 'x' | fold -w 100; echo; echo the end", time.Minute, limit)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > limit || !strings.HasSuffix(string(out), "the end\n") || out[len(out)-9] != '\n' {
		t.Errorf("kept %d bytes ending %q", len(out), out[max(0, len(out)-20):])
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*limit {
		t.Errorf("a 100 MB capture allocated %d bytes, more than 4 times the %d-byte bound", alloc, limit)
	}
}

// fakeReader answers from a table of screens and counts its reads.
type fakeReader struct {
	mu      sync.Mutex
	answers map[string]Reading
	reads   []string
	last    string
}

func (f *fakeReader) ReadScreen(_ context.Context, _ Source, snap []byte) (Reading, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, string(snap))
	r, ok := f.answers[strings.TrimSpace(string(snap))]
	if !ok {
		return Reading{}, errors.New("the model is unreachable")
	}
	fp := r.Fingerprint
	if r.Status != "has_question" {
		fp = "~" + r.Status
	}
	r.Duplicate = r.Status == "has_question" && fp == f.last
	f.last = fp
	return r, nil
}

func TestTheWatcherReadsOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	screen := filepath.Join(dir, "screen")
	approval := Reading{Status: "has_question", Message: "Do you want to proceed?\nls -la\n1. Yes\n2. No\n\nReply with a letter/number to choose",
		Fingerprint: "do-you-want-to-proceed-ls-la-1", Type: "choice", Options: []string{"Yes", "No"}, Agent: "claude_code", Subject: "ls -la", Rule: "menu"}
	reader := &fakeReader{answers: map[string]Reading{
		"✶ Brewing… (1s · esc to interrupt)": {Status: "processing"},
		"✶ Brewing… (2s · esc to interrupt)": {Status: "processing"},
		"q":            approval,
		"q\n❯ yes, go": approval,
	}}
	var notes []*http.Request
	var bodies []string
	var mu sync.Mutex
	ntfy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		notes, bodies = append(notes, r), append(bodies, string(b))
		mu.Unlock()
	}))
	defer ntfy.Close()
	var out, errs bytes.Buffer
	w := New(Options{Timeout: 5 * time.Second, Limit: 1 << 20, Reader: reader, Out: &out, Errs: &errs,
		Notifier: &Notifier{URL: ntfy.URL, Client: ntfy.Client()}}, []Source{{ID: "main:1.0", Command: "cat " + screen, Workspace: "main:1.0 ~/src/api"}})
	steps := []struct {
		screen string
		reads  int
	}{
		{"✶ Brewing… (1s · esc to interrupt)", 1},
		{"✶ Brewing… (1s · esc to interrupt)", 1}, // unchanged: the capture only
		{"✶ Brewing… (2s · esc to interrupt)", 1}, // busy after busy: not read again
		{"\n   \n", 1}, // blank, between two redraws: not read
		{"q", 2},
		{"q   ", 2},     // trailing spaces: nothing new to read
		{"\x1b[1mq", 2}, // a redraw in bold: nothing new to read
		{"q\n❯ yes, go", 3},
		{"q\n❯ yes, go ahead", 3}, // the user typing a reply: masked, nothing new
		{"gone", 4},
		{"gone", 4},
	}
	for i, st := range steps {
		if err := os.WriteFile(screen, []byte(st.screen), 0o600); err != nil {
			t.Fatal(err)
		}
		w.once(t.Context(), w.sources[0])
		if len(reader.reads) != st.reads {
			t.Errorf("step %d (%q): %d reads, want %d", i, st.screen, len(reader.reads), st.reads)
		}
	}
	if strings.Count(out.String(), "\n") != 1 || len(notes) != 1 {
		t.Fatalf("printed %q, %d notifications; want one of each", out.String(), len(notes))
	}
	h := notes[0].Header
	if h.Get("Title") != "Claude Code asks for approval - main:1.0 ~/src/api" || h.Get("Priority") != "high" || h.Get("Tags") != "warning" ||
		bodies[0] != approval.Message {
		t.Errorf("notification %v %q", h, bodies[0])
	}
	if got := strings.Count(errs.String(), "unreachable"); got != 1 {
		t.Errorf("the same failure reported %d times, want once:\n%s", got, errs.String())
	}
}

func TestNotificationFormats(t *testing.T) {
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r, must(io.ReadAll(r.Body))
	}))
	defer srv.Close()
	n := noticeOf(Source{ID: "s", Workspace: "工作区 ~/src"}, Reading{Status: "has_question", Message: "Continue?\n\nReply y/n", Type: "confirmation",
		Options: []string{"Yes", "No"}, Fingerprint: "continue", RunID: "r1"})
	if n.Title != "The agent asks a question - 工作区 ~/src" || n.Reason != "question" {
		t.Errorf("notice %+v", n)
	}
	text := &Notifier{URL: srv.URL, Format: FormatText, Client: srv.Client()}
	if err := text.Send(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if title := got.Header.Get("Title"); !strings.HasPrefix(title, "=?utf-8?b?") || string(body) != n.Message {
		t.Errorf("a non-ASCII title is %q, body %q", title, body)
	}
	js := &Notifier{URL: srv.URL, Format: FormatJSON, Client: srv.Client()}
	if err := js.Send(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	var back Notice
	if err := json.Unmarshal(body, &back); err != nil || got.Header.Get("Content-Type") != "application/json" || back.Title != n.Title ||
		back.Options[1] != "No" || back.RunID != "r1" {
		t.Errorf("JSON notification %s (%v)", body, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
