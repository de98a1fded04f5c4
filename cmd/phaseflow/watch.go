package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/store"
)

// watchCommandTimeout bounds one run of the watched command (a capture is instant; a hung
// one must not stop the watch).
const watchCommandTimeout = 30 * time.Second

// watchFlags are the flags of "phaseflow watch" besides the server's settings.
type watchFlags struct {
	command, sourceID, notifyURL, locale, sub *string
	every                                     *time.Duration
}

// runWatch runs a command (a terminal capture) every interval, runs terminal_state on its
// output whenever it changed, and prints one JSON line per new question; with --notify-url
// it also POSTs the question's message there as text/plain (the ntfy convention). A
// question its source asked last, within the de-duplication window, is not new. It runs
// until interrupted (exit 0); 2 for a usage or configuration error.
func runWatch(ctx context.Context, sio stdio, args []string) int {
	fs := flag.NewFlagSet("phaseflow watch", flag.ContinueOnError)
	f := watchFlags{
		command:   fs.String("command", "", `the command whose output is the snapshot, run with sh -c (e.g. "tmux capture-pane -p -t agent -S -800"); required`),
		every:     fs.Duration("every", 3*time.Second, "how often the command runs"),
		sourceID:  fs.String("source-id", "", "what is watched, for de-duplication and the runs list (default: the command)"),
		notifyURL: fs.String("notify-url", "", "POST each new question's message here as text/plain (e.g. https://ntfy.sh/TOPIC)"),
		locale:    fs.String("locale", "en", "locale of the prompts: en or zh"),
		sub:       fs.String("sub", cliUser, "user the runs are stored under"),
	}
	cfg, err := config.LoadFlags(fs, args, sio.getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(sio.out, err)
		return 0
	}
	if err == nil {
		err = f.check()
	}
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow watch: %v\nRun \"phaseflow watch -h\" for usage.\n", err)
		return 2
	}
	env, err := openSkillEnv(ctx, cfg, sio.err)
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow watch: %v\n", err)
		return 2
	}
	defer env.close()
	w := &watcher{flags: f, runner: env.runner, out: sio.out, errw: sio.err, client: &http.Client{Timeout: 10 * time.Second}}
	w.loop(ctx)
	return 0
}

// check reports a usage error and fills the default source id.
func (f watchFlags) check() error {
	switch {
	case strings.TrimSpace(*f.command) == "":
		return errors.New("--command is required")
	case *f.every < 100*time.Millisecond:
		return fmt.Errorf("--every must be at least 100ms, got %v", *f.every)
	}
	if *f.notifyURL != "" {
		if u, err := url.Parse(*f.notifyURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--notify-url: want an http or https URL, got %q", config.RedactURL(*f.notifyURL))
		}
	}
	if *f.sourceID == "" {
		*f.sourceID = *f.command
	}
	if len(*f.sourceID) > 200 {
		*f.sourceID = (*f.sourceID)[:200]
	}
	return nil
}

// watcher is one watch's state.
type watcher struct {
	flags      watchFlags
	runner     *jsonskill.Runner
	out, errw  io.Writer
	client     *http.Client
	last       []byte // the last snapshot read
	lastFailed bool   // the command failed last time: a run of failures is reported once
}

// question is the line printed for a new question.
type question struct {
	Time        time.Time `json:"time"`
	SourceID    string    `json:"source_id"`
	RunID       string    `json:"run_id"`
	Message     string    `json:"message"`
	Fingerprint string    `json:"fingerprint"`
	MessageType string    `json:"message_type"`
	Options     []string  `json:"options"`
}

// loop reads the snapshot every interval until ctx ends.
func (w *watcher) loop(ctx context.Context) {
	tick := time.NewTicker(*w.flags.every)
	defer tick.Stop()
	for {
		w.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// once reads the snapshot and, when it changed, reports a new question in it.
func (w *watcher) once(ctx context.Context) {
	snap, err := w.capture(ctx)
	if err != nil {
		if !w.lastFailed && ctx.Err() == nil {
			fmt.Fprintf(w.errw, "phaseflow watch: %v\n", err)
		}
		w.lastFailed = true
		return
	}
	w.lastFailed = false
	if bytes.Equal(snap, w.last) {
		return
	}
	w.last = snap
	q, ok := w.ask(ctx, snap)
	if !ok {
		return
	}
	line, err := json.Marshal(q)
	if err != nil {
		fmt.Fprintf(w.errw, "phaseflow watch: encode the question: %v\n", err)
		return
	}
	fmt.Fprintln(w.out, string(line))
	w.notify(ctx, q)
}

// capture runs the command once.
func (w *watcher) capture(ctx context.Context) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, watchCommandTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(cctx, "sh", "-c", *w.flags.command)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("command failed: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// ask runs terminal_state on snap and returns its question when it is a new one.
func (w *watcher) ask(ctx context.Context, snap []byte) (question, bool) {
	input, err := json.Marshal(map[string]string{"terminal": string(snap)})
	if err != nil {
		fmt.Fprintf(w.errw, "phaseflow watch: encode the snapshot: %v\n", err)
		return question{}, false
	}
	run, err := w.runner.Run(ctx, jsonskill.Request{UserID: *w.flags.sub, Skill: "terminal_state", Locale: *w.flags.locale,
		SourceID: *w.flags.sourceID, Input: input})
	if err != nil {
		if ctx.Err() == nil {
			fmt.Fprintf(w.errw, "phaseflow watch: %v\n", err)
		}
		return question{}, false
	}
	if run.Status != store.RunSucceeded {
		fmt.Fprintf(w.errw, "phaseflow watch: run %s failed: %s\n", run.ID, run.Error)
		return question{}, false
	}
	var out struct {
		Status      string   `json:"status"`
		Message     string   `json:"message"`
		Fingerprint string   `json:"fingerprint"`
		MessageType string   `json:"message_type"`
		Options     []string `json:"options"`
	}
	if err := json.Unmarshal(run.Output, &out); err != nil || out.Status != "has_question" || run.Duplicate {
		return question{}, false
	}
	return question{Time: run.CreatedAt, SourceID: run.SourceID, RunID: run.ID, Message: out.Message,
		Fingerprint: out.Fingerprint, MessageType: out.MessageType, Options: out.Options}, true
}

// notify POSTs the question's message to --notify-url, when set.
func (w *watcher) notify(ctx context.Context, q question) {
	if *w.flags.notifyURL == "" {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, *w.flags.notifyURL, strings.NewReader(q.Message))
	if err != nil {
		fmt.Fprintf(w.errw, "phaseflow watch: notify: %v\n", err)
		return
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Title", headerText("A question from "+q.SourceID))
	resp, err := w.client.Do(req)
	if err != nil {
		fmt.Fprintf(w.errw, "phaseflow watch: notify: %v\n", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fmt.Fprintf(w.errw, "phaseflow watch: notify: %s answered %s\n", config.RedactURL(*w.flags.notifyURL), resp.Status)
	}
}

// headerText keeps the printable ASCII of s, at most 120 bytes: a header value may hold
// neither line breaks nor, for some receivers, anything else.
func headerText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 0x20 && r < 0x7f && b.Len() < 120 {
			b.WriteRune(r)
		}
	}
	return b.String()
}
