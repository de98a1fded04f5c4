// Command phaseflow is the one Phaseflow binary: the chat server and the tools around it.
//
//	phaseflow serve           run the HTTP server (the default when no command is given)
//	phaseflow migrate         apply the embedded database migrations and exit
//	phaseflow validate        check a ThinkingML reply (exit 0 valid, 1 invalid, 2 usage)
//	phaseflow token           print a signed JWT for local use and scripts
//	phaseflow mock-upstream   run the scripted Responses-API upstream on its own
//	phaseflow skill           list the JSON skills, or run one
//	phaseflow watch           run terminal_state on a command's output, a line per new question
//	phaseflow healthcheck     exit 0 when the server's /readyz answers 200 (the image's HEALTHCHECK)
//	phaseflow version         print the build's version and VCS revision (also --version)
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// stdio is what a subcommand may touch of the process: its streams and environment. Passing
// it in keeps every command testable without touching the real process.
type stdio struct {
	in     io.Reader
	out    io.Writer
	err    io.Writer
	getenv func(string) string
	// environ lists the environment ("NAME=value"); nil means none.
	environ func() []string
}

// environ is the process's environment as the command sees it.
func (s stdio) environment() []string {
	if s.environ == nil {
		return nil
	}
	return s.environ()
}

// command runs one subcommand with its arguments (without the command name) and returns the
// process exit status.
type command func(ctx context.Context, sio stdio, args []string) int

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv, environ: os.Environ}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run dispatches to the subcommand named by args[0].
func run(ctx context.Context, sio stdio, args []string) int {
	commands := map[string]command{
		"serve":         runServe,
		"migrate":       runMigrate,
		"validate":      runValidate,
		"token":         runToken,
		"mock-upstream": runMockUpstream,
		"skill":         runSkill,
		"watch":         runWatch,
		"healthcheck":   runHealthcheck,
		"version":       runVersion,
	}
	name := "serve"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "help", "-h", "--help":
		fmt.Fprintln(sio.out, usage)
		return 0
	case "--version", "-version":
		name = "version"
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(sio.err, "phaseflow: unknown command %q\n\n%s\n", name, usage)
		return 2
	}
	return cmd(ctx, sio, args)
}

const usage = `usage: phaseflow <command> [flags]

commands:
  serve           run the HTTP server (default)
  migrate         apply database migrations and exit
  validate        check a ThinkingML reply: phaseflow validate [--json] [--no-serp-required] [FILE|-]
  token           print a signed JWT: phaseflow token --sub alice [--role admin] [--ttl 24h]
  mock-upstream   run the scripted upstream: phaseflow mock-upstream --addr 127.0.0.1:9090
  skill           JSON skills: phaseflow skill list | phaseflow skill run NAME --input FILE
  watch           watch an agent's terminal: phaseflow watch --command "tmux capture-pane -p -t agent -S -800"
  healthcheck     exit 0 when the server is ready: phaseflow healthcheck [--addr host:port]
  version         print the version and VCS revision (also phaseflow --version)

Run "phaseflow <command> -h" for the flags of one command.`
