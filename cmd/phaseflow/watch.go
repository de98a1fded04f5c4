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
	command, sourceID, notifyURL, format, locale, sub *string
	every, timeout                                    *time.Duration
}

// runWatch watches one terminal (see package watcher) until interrupted: exit 0; 2 for a
// usage or configuration error.
func runWatch(ctx context.Context, sio stdio, args []string) int {
	fs := flag.NewFlagSet("phaseflow watch", flag.ContinueOnError)
	f := watchFlags{
		command:   fs.String("command", "", `the command whose output is the screen, run with sh -c (e.g. "tmux capture-pane -p -t agent -S -800"); required`),
		every:     fs.Duration("every", 3*time.Second, "how often the command runs"),
		timeout:   fs.Duration("capture-timeout", 10*time.Second, "how long one run of the command may take; past it the command and all it started are killed"),
		sourceID:  fs.String("source-id", "", "what is watched, for de-duplication and the runs list (default: the tmux pane the command captures, else the command)"),
		notifyURL: fs.String("notify-url", "", "POST each new question here (e.g. https://ntfy.sh/TOPIC)"),
		format:    fs.String("notify-format", watcher.FormatText, "text (the message, with ntfy's Title, Priority and Tags headers) or json (one object)"),
		locale:    fs.String("locale", "en", "locale of the prompts and messages: en or zh"),
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
	opts := watcher.Options{Every: *f.every, Timeout: *f.timeout, Limit: captureLimit, Out: sio.out, Errs: sio.err,
		Reader: watcher.Local{Runner: env.runner, User: *f.sub, Locale: *f.locale}}
	if *f.notifyURL != "" {
		opts.Notifier = &watcher.Notifier{URL: *f.notifyURL, Format: *f.format, Client: &http.Client{Timeout: 10 * time.Second}}
	}
	src := watcher.Describe(ctx, watcher.Source{ID: *f.sourceID, Command: *f.command, Workspace: *f.sourceID})
	watcher.New(opts, []watcher.Source{src}).Run(ctx)
	return 0
}

// check reports a usage error.
func (f watchFlags) check() error {
	switch {
	case strings.TrimSpace(*f.command) == "":
		return errors.New("--command is required")
	case *f.every < 100*time.Millisecond:
		return fmt.Errorf("--every must be at least 100ms, got %v", *f.every)
	case *f.timeout <= 0:
		return fmt.Errorf("--capture-timeout must be positive, got %v", *f.timeout)
	case *f.format != watcher.FormatText && *f.format != watcher.FormatJSON:
		return fmt.Errorf("--notify-format: want text or json, got %q", *f.format)
	case len(*f.sourceID) > 200:
		return fmt.Errorf("--source-id: at most 200 bytes, got %d", len(*f.sourceID))
	}
	if *f.notifyURL != "" {
		if u, err := url.Parse(*f.notifyURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--notify-url: want an http or https URL, got %q", config.RedactURL(*f.notifyURL))
		}
	}
	return nil
}
