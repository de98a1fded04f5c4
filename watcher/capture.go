package watcher

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// waitDelay is how long a killed capture may take to release its output before the
// watcher stops waiting for it.
const waitDelay = 500 * time.Millisecond

// errTimeout is a capture that ran past its timeout and was killed.
var errTimeout = errors.New("did not finish in time and was killed, with every process it started")

// capture runs command with sh -c in a process group of its own and returns the last limit
// bytes of its output. At timeout, or when ctx ends, the whole group is killed: a shell's
// child that keeps the output open cannot hold the watcher.
func capture(ctx context.Context, command string, timeout time.Duration, limit int) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "-c", command)
	ownGroup(cmd)
	cmd.WaitDelay = waitDelay
	out, errs := newTail(limit), newTail(4096)
	cmd.Stdout, cmd.Stderr = out, errs
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("capture %q %w after %v", command, errTimeout, timeout)
	case err != nil:
		return nil, fmt.Errorf("capture %q: %w: %s", command, err, strings.TrimSpace(string(errs.Bytes())))
	}
	return out.Bytes(), nil
}
