package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/metrics"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
)

// cliUser is the user the command-line runs are stored under unless --sub says otherwise.
const cliUser = "cli"

// runSkill serves "phaseflow skill list" and "phaseflow skill run NAME".
func runSkill(ctx context.Context, sio stdio, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(sio.err, skillUsage)
		return 2
	}
	switch args[0] {
	case "list":
		return skillList(sio, args[1:])
	case "run":
		return skillRun(ctx, sio, args[1:])
	case "-h", "--help", "help":
		fmt.Fprint(sio.out, skillUsage)
		return 0
	}
	fmt.Fprintf(sio.err, "phaseflow skill: unknown subcommand %q\n\n%s", args[0], skillUsage)
	return 2
}

const skillUsage = `usage:
  phaseflow skill list                 the JSON skills, one per line (name, version, locales, description)
  phaseflow skill run NAME [flags]     run one skill and print the run as JSON

Run "phaseflow skill run -h" for the flags of a run.
`

// skillList prints the embedded skills.
func skillList(sio stdio, args []string) int {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" {
		fmt.Fprintf(sio.err, "phaseflow skill list: unexpected argument %q\n", args[0])
		return 2
	}
	catalog, err := jsonskill.Load(skills.New().JSON())
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow skill list: %v\n", err)
		return 1
	}
	for _, sk := range catalog.List() {
		fmt.Fprintf(sio.out, "%s\tv%s\t%s\t%s\n", sk.Name, sk.Version, strings.Join(sk.Locales, ","), sk.Description)
	}
	return 0
}

// skillRunFlags are the flags of "phaseflow skill run" besides the server's settings.
type skillRunFlags struct {
	input, terminal, locale, sourceID, sub *string
}

// skillRun runs one skill with the server's upstream configuration (the built-in scripted
// upstream when none is set) and its database, stores the run and prints it: exit 0 when
// it succeeded, 1 when it failed, 2 for a usage, input or configuration error.
func skillRun(ctx context.Context, sio stdio, args []string) int {
	name := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("phaseflow skill run NAME", flag.ContinueOnError)
	f := skillRunFlags{
		input:    fs.String("input", "", "file holding the skill's input as a JSON object, or - for stdin"),
		terminal: fs.String("terminal", "", "for terminal_state: a file holding the terminal snapshot as text, or - for stdin"),
		locale:   fs.String("locale", "en", "locale of the prompts: en or zh"),
		sourceID: fs.String("source-id", "", "what is watched (one terminal, say): a repeated question from it is a duplicate"),
		sub:      fs.String("sub", cliUser, "user the run is stored under"),
	}
	cfg, err := config.LoadFlags(fs, args, sio.getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(sio.out, err)
		return 0
	}
	if err == nil && name == "" {
		err = errors.New("name the skill to run: phaseflow skill run NAME")
	}
	var input json.RawMessage
	if err == nil {
		input, err = f.readInput(sio.in, name)
	}
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow skill run: %v\nRun \"phaseflow skill run -h\" for usage.\n", err)
		return 2
	}
	env, err := openSkillEnv(ctx, cfg, sio.err)
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow skill run: %v\n", err)
		return 2
	}
	defer env.close()
	run, err := env.runner.Run(ctx, jsonskill.Request{UserID: *f.sub, Skill: name, Locale: *f.locale, SourceID: *f.sourceID, Input: input})
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow skill run: %v\n", err)
		if isInput, _ := jsonskill.IsInputError(err); isInput || errors.Is(err, jsonskill.ErrUnknownSkill) {
			return 2
		}
		return 1
	}
	out, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow skill run: encode the run: %v\n", err)
		return 1
	}
	fmt.Fprintln(sio.out, string(out))
	if run.Status != store.RunSucceeded {
		return 1
	}
	return 0
}

// readInput reads the run's input: --input as a JSON object, or --terminal as the snapshot
// of a terminal_state input.
func (f skillRunFlags) readInput(stdin io.Reader, name string) (json.RawMessage, error) {
	switch {
	case *f.input != "" && *f.terminal != "":
		return nil, errors.New("give --input or --terminal, not both")
	case *f.terminal != "":
		if name != "terminal_state" {
			return nil, fmt.Errorf("--terminal is terminal_state's input, not %s's", name)
		}
		text, err := readFileOrStdin(*f.terminal, stdin)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(map[string]string{"terminal": string(text)})
		if err != nil {
			return nil, fmt.Errorf("encode the snapshot: %w", err)
		}
		return b, nil
	case *f.input != "":
		return readFileOrStdin(*f.input, stdin)
	}
	return nil, errors.New("give the input: --input FILE (or -), or --terminal FILE for terminal_state")
}

// readFileOrStdin reads path, or stdin for "-".
func readFileOrStdin(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// skillEnv is what a command-line skill run needs: the server's database and upstreams.
type skillEnv struct {
	runner *jsonskill.Runner
	close  func()
}

// openSkillEnv opens the configured database (migrated) and upstreams, as the server
// would, with a logger that writes warnings and errors (debug when asked for) to w.
func openSkillEnv(ctx context.Context, cfg config.Config, w io.Writer) (*skillEnv, error) {
	if cfg.LogLevel == slog.LevelInfo {
		cfg.LogLevel = slog.LevelWarn // a command's output is its result, not the set-up
	}
	logger := cfg.Logger(w)
	st, err := openMigrated(ctx, cfg, logger)
	if err != nil {
		return nil, err // a SQLite data dir a server holds says so, and what to do
	}
	up, _, stopUpstream, err := startUpstream(ctx, cfg, logger, metrics.New()) // a command's own, unserved
	if err != nil {
		st.Close()
		return nil, err
	}
	runner, err := newSkillRunner(cfg, up, st, logger, nil)
	if err != nil {
		stopUpstream()
		st.Close()
		return nil, err
	}
	return &skillEnv{runner: runner, close: func() { stopUpstream(); st.Close() }}, nil
}
