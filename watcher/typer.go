package watcher

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/jsonskill/terminal"
)

// typeTimeout bounds one run of the answer command.
const typeTimeout = 5 * time.Second

// Typer types an answer's keys into the pane that asked by running a command with the keys
// as its last arguments, never through a shell: tmux send-keys with the pane as its target
// by default (Tmux), or the user's --answer-command. Keys are cleaned again before they are
// typed (terminal.CleanKeys), whoever sent them.
type Typer struct {
	// Argv is the command before the keys, e.g. tmux -L agents send-keys -t %3.
	Argv []string
	// Tmux says Argv is tmux send-keys: text goes with -l, so that tmux types it as it is
	// and never reads a word of it as a key name.
	Tmux bool
}

// Type types keys: named keys together, each text in a run of its own.
func (t Typer) Type(ctx context.Context, keys []terminal.Key) error {
	keys = terminal.CleanKeys(keys)
	if len(keys) == 0 {
		return errors.New("type: no keys to type")
	}
	var names []string
	flush := func() error {
		if len(names) == 0 {
			return nil
		}
		err := t.run(ctx, names...)
		names = nil
		return err
	}
	for _, k := range keys {
		if k.Text == "" {
			names = append(names, k.Name)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		args := []string{k.Text}
		if t.Tmux {
			args = []string{"-l", "--", k.Text}
		}
		if err := t.run(ctx, args...); err != nil {
			return err
		}
	}
	return flush()
}

// run runs the command with args after Argv.
func (t Typer) run(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, typeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, t.Argv[0], append(t.Argv[1:len(t.Argv):len(t.Argv)], args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("type: %s: %w: %s", strings.Join(t.Argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
