package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/watcher"
)

// captureLimit is how much of a capture the watcher keeps: terminal_state's largest
// snapshot.
const captureLimit = 1 << 20

// watchFlags are the flags of "phaseflow watch" besides the server's settings.
type watchFlags struct {
	command, panes, tmux, answerCmd, sourceID, notifyURL, format, locale, sub, server, token *string
	every, timeout                                                                           *time.Duration
}

// runWatch watches terminals (see package watcher) until interrupted: exit 0; 2 for a usage
// or configuration error.
func runWatch(ctx context.Context, sio stdio, args []string) int {
	fs := flag.NewFlagSet("phaseflow watch", flag.ContinueOnError)
	f := watchFlags{
		command:   fs.String("command", "", `the command whose output is the screen, run with sh -c (e.g. "tmux capture-pane -p -t agent -S -800"); this or --panes`),
		panes:     fs.String("panes", "", `watch tmux panes instead of one command: "all", or the pane ids (%3) and session names to watch, comma-separated; panes that open or close are picked up`),
		tmux:      fs.String("tmux", "tmux", `the tmux command of --panes, with its socket options (e.g. "tmux -L agents")`),
		answerCmd: fs.String("answer-command", "", "the command that types an answer into the --command's pane, run with the keys as its last arguments and no shell (default: tmux send-keys -t PANE, the pane the capture command names)"),
		every:     fs.Duration("every", 3*time.Second, "how often each screen is captured"),
		timeout:   fs.Duration("capture-timeout", 10*time.Second, "how long one capture may take; past it the command and all it started are killed"),
		sourceID:  fs.String("source-id", "", "what --command watches, for de-duplication and the runs list (default: the tmux pane the command captures, else the command)"),
		notifyURL: fs.String("notify-url", "", "POST each new question here (e.g. https://ntfy.sh/TOPIC)"),
		format:    fs.String("notify-format", watcher.FormatText, "text (the message, with ntfy's Title, Priority, Tags, Click and Actions headers) or json (one object)"),
		locale:    fs.String("locale", "en", "locale of the prompts, messages and answer pages: en or zh"),
		sub:       fs.String("sub", cliUser, "user the runs are stored under (without --server)"),
		server:    fs.String("server", "", "a Phaseflow server to work through: it reads the screens, keeps the questions and sends their answers back, so this computer needs neither the database nor the model's key"),
		token:     fs.String("token", "", "the user's bearer token for --server (default: $PHASEFLOW_TOKEN)"),
	}
	cfg, err := config.LoadFlags(fs, args, sio.getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(sio.out, err)
		return 0
	}
	if *f.token == "" {
		*f.token = sio.getenv("PHASEFLOW_TOKEN")
	}
	if err == nil {
		err = f.check()
	}
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow watch: %v\nRun \"phaseflow watch -h\" for usage.\n", err)
		return 2
	}
	opts := watcher.Options{Every: *f.every, Timeout: *f.timeout, Limit: captureLimit, Out: sio.out, Errs: sio.err, Locale: *f.locale}
	if *f.server != "" {
		remote := watcher.Remote{Base: strings.TrimSuffix(*f.server, "/"), Token: *f.token, Locale: *f.locale,
			Client: &http.Client{Timeout: 2 * time.Minute}, Stream: &http.Client{}}
		opts.Reader, opts.Questions = remote, remote
	} else {
		env, err := openSkillEnv(ctx, cfg, sio.err)
		if err != nil {
			fmt.Fprintf(sio.err, "phaseflow watch: %v\n", err)
			return 2
		}
		defer env.close()
		opts.Reader = watcher.Local{Runner: env.runner, User: *f.sub, Locale: *f.locale}
	}
	if *f.notifyURL != "" {
		opts.Notifier = &watcher.Notifier{URL: *f.notifyURL, Format: *f.format, Client: &http.Client{Timeout: 10 * time.Second}}
	}
	watcher.New(opts, f.sources(ctx, &opts)).Run(ctx)
	return 0
}

// sources are the watched terminals: the one --command captures, or none yet for --panes
// (the watcher lists them each round).
func (f watchFlags) sources(ctx context.Context, opts *watcher.Options) []watcher.Source {
	if *f.panes != "" {
		p := &watcher.Panes{Tmux: *f.tmux}
		if *f.panes != "all" {
			p.Targets = strings.Split(*f.panes, ",")
		}
		opts.Panes = p
		return nil
	}
	src := watcher.Source{ID: *f.sourceID, Command: *f.command, Workspace: *f.sourceID}
	if *f.answerCmd != "" {
		src.Typer = &watcher.Typer{Argv: strings.Fields(*f.answerCmd)}
	}
	return []watcher.Source{watcher.Describe(ctx, src)}
}

// check reports a usage error.
func (f watchFlags) check() error {
	switch {
	case (strings.TrimSpace(*f.command) == "") == (*f.panes == ""):
		return errors.New("give --command or --panes (one of them)")
	case strings.TrimSpace(*f.tmux) == "":
		return errors.New("--tmux is empty")
	case *f.every < 100*time.Millisecond:
		return fmt.Errorf("--every must be at least 100ms, got %v", *f.every)
	case *f.timeout <= 0:
		return fmt.Errorf("--capture-timeout must be positive, got %v", *f.timeout)
	case *f.format != watcher.FormatText && *f.format != watcher.FormatJSON:
		return fmt.Errorf("--notify-format: want text or json, got %q", *f.format)
	case len(*f.sourceID) > 200:
		return fmt.Errorf("--source-id: at most 200 bytes, got %d", len(*f.sourceID))
	case *f.server != "" && *f.token == "":
		return errors.New("--server needs --token (or $PHASEFLOW_TOKEN)")
	}
	for name, u := range map[string]string{"--notify-url": *f.notifyURL, "--server": *f.server} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%s: want an http or https URL, got %q", name, config.RedactURL(u))
		}
	}
	return nil
}
