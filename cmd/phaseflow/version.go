package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// runVersion prints the module version and the VCS revision the binary was built from (a
// go build in a git checkout stamps them), so an operator can tell which build runs.
func runVersion(_ context.Context, sio stdio, args []string) int {
	const usage = "usage: phaseflow version (or phaseflow --version)"
	switch {
	case len(args) == 1 && (args[0] == "-h" || args[0] == "--help"):
		fmt.Fprintln(sio.out, usage)
		return 0
	case len(args) > 0:
		fmt.Fprintf(sio.err, "phaseflow version: unexpected argument %q\n%s\n", args[0], usage)
		return 2
	}
	fmt.Fprintln(sio.out, versionLine())
	return 0
}

// versionLine is "phaseflow <module version> <revision>[+dirty] <commit time> <go version>".
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "phaseflow (no build information)"
	}
	rev, at, dirty := "unknown", "", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	return fmt.Sprintf("phaseflow %s %s%s%s %s", info.Main.Version, rev, dirty, at, info.GoVersion)
}
