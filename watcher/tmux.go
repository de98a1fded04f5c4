package watcher

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// paneTarget matches a tmux capture-pane command: the tmux invocation before it (with its
// socket options) and the pane it names with -t.
func paneTarget() *regexp.Regexp {
	return regexp.MustCompile(`^\s*(\S*\btmux\b[^|;&]*?)\s+capture-pane\b.*\s-t\s*(\S+)`)
}

// Describe fills a source's id and workspace the user did not give: for a tmux capture,
// the pane as tmux names it ("session:window.pane") and its working directory; for any
// other command, the command itself.
func Describe(ctx context.Context, src Source) Source {
	if src.ID != "" && src.Workspace != "" {
		return src
	}
	name, dir := "", ""
	if m := paneTarget().FindStringSubmatch(src.Command); m != nil {
		name, dir = paneInfo(ctx, m[1], m[2])
		if src.Typer == nil {
			src.Typer = &Typer{Argv: append(strings.Fields(m[1]), "send-keys", "-t", m[2]), Tmux: true}
		}
	}
	if src.ID == "" {
		src.ID = cmpOr(name, src.Command)
		if len(src.ID) > 200 {
			src.ID = src.ID[:200]
		}
	}
	if src.Workspace == "" {
		src.Workspace = src.ID
		if name != "" {
			src.Workspace = strings.TrimSpace(name + " " + dir)
		}
	}
	return src
}

// paneInfo asks the tmux of the capture command (tmux, with the same socket options) for
// a pane's name and working directory; "" when tmux cannot say. The target is the user's
// own, from their command, and runs through the shell as their command does.
func paneInfo(ctx context.Context, tmux, target string) (name, dir string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c",
		tmux+" display-message -p -t "+target+` '#{session_name}:#{window_index}.#{pane_index}	#{pane_current_path}'`).Output()
	if err != nil {
		return "", ""
	}
	name, dir, _ = strings.Cut(strings.TrimSpace(string(out)), "\t")
	return name, dir
}

// Panes lists a tmux server's panes, each a source of its own.
type Panes struct {
	// Tmux is the tmux invocation with its socket options, e.g. "tmux -L agents".
	Tmux string
	// Targets keeps the panes whose id (%3) or session name it lists; none keeps every pane.
	Targets []string
}

// paneFormat is what list-panes prints of a pane: its id, its name and its directory.
const paneFormat = "#{pane_id}\t#{session_name}:#{window_index}.#{pane_index}\t#{pane_current_path}"

// List is every pane of the tmux server the targets keep, as sources named by session,
// window, pane and working directory, captured and typed into by pane id.
func (p Panes) List(ctx context.Context) ([]Source, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	argv := append(strings.Fields(p.Tmux), "list-panes", "-a", "-F", paneFormat)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return nil, fmt.Errorf("list the tmux panes (%s): %w", p.Tmux, err)
	}
	var sources []Source
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || !p.keeps(f[0], f[1]) {
			continue
		}
		id := strings.TrimSpace(f[1] + " " + f[2])
		if len(id) > 200 {
			id = id[:200]
		}
		sources = append(sources, Source{ID: id, Workspace: id,
			Command: p.Tmux + " capture-pane -p -J -t " + f[0] + " -S -" + fmt.Sprint(captureLines),
			Typer:   &Typer{Argv: append(strings.Fields(p.Tmux), "send-keys", "-t", f[0]), Tmux: true}})
	}
	return sources, nil
}

// keeps reports whether the targets keep the pane id of the session in name.
func (p Panes) keeps(id, name string) bool {
	if len(p.Targets) == 0 {
		return true
	}
	session, _, _ := strings.Cut(name, ":")
	for _, t := range p.Targets {
		if t == id || t == session {
			return true
		}
	}
	return false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
