package watcher

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/jsonskill/terminal"
	"github.com/phaseflow/phaseflow/store"
)

// lockedBuffer is a buffer the watcher's goroutine writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// recordingCommand is a command that appends each argument it gets, on a line of its own,
// to a file, and the file.
func recordingCommand(t *testing.T) ([]string, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "args")
	script := filepath.Join(t.TempDir(), "rec.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> "+log+"; done\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return []string{script, "-t", "%3"}, log
}

// The keys are the command's last arguments, each as given: text that looks like a shell
// command or a key name reaches the command as one argument, cleaned of control
// characters; tmux gets text with -l so it never reads a word of it as a key.
func TestTyperPassesKeysAsArguments(t *testing.T) {
	argv, log := recordingCommand(t)
	keys := []terminal.Key{{Text: "Enter; rm -rf ~ $(reboot)\x1b[2J"}, {Name: "Enter"}, {Name: "C-c"}}
	if err := (Typer{Argv: argv, Tmux: true}).Type(t.Context(), keys); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(log)
	want := "-t\n%3\n-l\n--\nEnter; rm -rf ~ $(reboot)\n-t\n%3\nEnter\n"
	if string(got) != want {
		t.Errorf("the command got\n%s\nwant\n%s", got, want)
	}
}

// fakeQuestions records what the watcher records and reports, and sends answers.
type fakeQuestions struct {
	mu       sync.Mutex
	recorded []Question
	reports  []string
	answers  chan Answer
}

func (f *fakeQuestions) Record(_ context.Context, q Question) (Recorded, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = append(f.recorded, q)
	return Recorded{ID: "q" + string(rune('0'+len(f.recorded))), New: true, AnswerURL: "http://p/answer/t",
		Actions: []Action{{Label: "Yes", URL: "http://p/answer/t?option=0"}}}, nil
}

func (f *fakeQuestions) Follow(ctx context.Context, answers chan<- Answer) error {
	for {
		select {
		case a := <-f.answers:
			answers <- a
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *fakeQuestions) Report(_ context.Context, id, state string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, id+" "+state)
	return nil
}

// A question is recorded and notified with its links; its answer is typed only while the
// pane still shows it, and a question the screen leaves without an answer is reported
// stale (answered at the computer).
func TestTheWatcherTypesAnswersIntoThePaneThatAsked(t *testing.T) {
	screen := filepath.Join(t.TempDir(), "screen")
	approval := Reading{Status: "has_question", Message: "Proceed?", Fingerprint: "proceed-1", Type: "confirmation",
		Options: []string{"Yes", "No"}, Keys: [][]string{{"y"}, {"n"}}, Agent: "claude_code"}
	reader := &fakeReader{answers: map[string]Reading{"ask": approval, "done": {Status: "idle"}}}
	argv, log := recordingCommand(t)
	qs := &fakeQuestions{answers: make(chan Answer)}
	var out, errs lockedBuffer
	src := Source{ID: "s", Command: "cat " + screen, Workspace: "s", Typer: &Typer{Argv: argv}}
	w := New(Options{Every: 50 * time.Millisecond, Timeout: 5 * time.Second, Limit: 1 << 20, Reader: reader, Questions: qs,
		Out: &out, Errs: &errs, Locale: "en"}, []Source{src})
	write := func(s string) {
		if err := os.WriteFile(screen, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ask")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	waitFor := func(cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out; reports %v, errors %s", qs.reports, errs.String())
			}
		}
	}
	recorded := func() int { qs.mu.Lock(); defer qs.mu.Unlock(); return len(qs.recorded) }
	reports := func() string { qs.mu.Lock(); defer qs.mu.Unlock(); return strings.Join(qs.reports, ",") }
	// The question is recorded, then its notice printed.
	waitFor(func() bool { return recorded() == 1 && strings.Contains(out.String(), "answer_url") })
	qs.mu.Lock()
	first := qs.recorded[0]
	qs.mu.Unlock()
	if !strings.Contains(out.String(), `"answer_url":"http://p/answer/t"`) || first.Options[0].Keys[0] != "y" {
		t.Errorf("the notice %s, the question %+v", out.String(), first)
	}
	qs.answers <- Answer{ID: "q1", SourceID: "s", Fingerprint: "proceed-1", Keys: []terminal.Key{{Name: "y"}}}
	waitFor(func() bool { return reports() == "q1 "+store.QuestionDelivered })
	if got, _ := os.ReadFile(log); string(got) != "-t\n%3\ny\n" {
		t.Errorf("typed %q", got)
	}
	qs.answers <- Answer{ID: "q9", SourceID: "elsewhere", Fingerprint: "x", Keys: []terminal.Key{{Name: "y"}}} // another watcher's

	lastRead := func() string { reader.mu.Lock(); defer reader.mu.Unlock(); return reader.reads[len(reader.reads)-1] }
	write("done")
	waitFor(func() bool { return lastRead() == "done" })
	write("ask") // the same question again, after work: a new wait
	waitFor(func() bool { return recorded() == 2 })
	write("done") // answered at the computer
	waitFor(func() bool { return reports() == "q1 delivered,q2 stale" })
	qs.answers <- Answer{ID: "q2", SourceID: "s", Fingerprint: "proceed-1", Keys: []terminal.Key{{Name: "y"}}}
	waitFor(func() bool { return reports() == "q1 delivered,q2 stale,q2 stale" })
	if got, _ := os.ReadFile(log); string(got) != "-t\n%3\ny\n" {
		t.Errorf("a late answer was typed: %q", got)
	}
	cancel()
	<-done
}
