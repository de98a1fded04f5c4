// Package watcher watches coding agents' terminals for the person who runs them: it
// captures each pane, has the terminal_state skill read it, and notifies once for each new
// question, naming the agent, the workspace and what waits for approval.
//
// A capture runs in its own process group and is killed whole at its timeout, so a command
// that hangs, or leaves a child holding its output open, cannot stop the watch; only the
// last part of a capture is kept, so memory stays bounded whatever the command prints. An
// unchanged screen costs the capture and nothing else, and a screen the rules read as busy
// again, after busy, is not read again: work goes on.
package watcher
