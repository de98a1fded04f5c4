//go:build !unix

package watcher

import "os/exec"

// ownGroup leaves cmd as it is where process groups are not Unix's: its cancellation
// kills the shell, and waitDelay stops the wait for a child that keeps the output.
func ownGroup(*exec.Cmd) {}
