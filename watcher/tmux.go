package watcher

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// paneTarget is a tmux capture-pane command: the tmux invocation before it (with its
// socket options) and the pane it names with -t.
var paneTarget = regexp.MustCompile(`^\s*(\S*\btmux\b[^|;&]*?)\s+capture-pane\b.*\s-t\s*(\S+)`)

// Describe fills a source's id and workspace the user did not give: for a tmux capture,
// the pane as tmux names it ("session:window.pane") and its working directory; for any
// other command, the command itself.
func Describe(ctx context.Context, src Source) Source {
	if src.ID != "" && src.Workspace != "" {
		return src
	}
	name, dir := "", ""
	if m := paneTarget.FindStringSubmatch(src.Command); m != nil {
		name, dir = paneInfo(ctx, m[1], m[2])
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

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
