package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

// version is the release the build says it is, set at link time:
//
//	go build -ldflags "-X main.version=1.4.0" ./cmd/phaseflow
//
// (the Dockerfile passes its VERSION build argument so). It is the one package variable of
// the binary, because -X can set nothing else; empty means the module version a go build
// in a git checkout stamps.
var version string

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

// buildVersion is what the binary says it is: the version given at link time, else the
// module version, with the VCS revision (and its commit time) when the build stamped one.
type buildVersion struct {
	Version, Revision, Time, Go string
}

// currentBuild reads the binary's build.
func currentBuild() buildVersion {
	b := buildVersion{Version: version, Revision: "unknown"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Go = info.GoVersion
	if b.Version == "" {
		b.Version = info.Main.Version
	}
	dirty := ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	b.Revision += dirty
	return b
}

// versionLine is "phaseflow <version> <revision>[+dirty] [<commit time>] <go version>".
func versionLine() string {
	b := currentBuild()
	line := fmt.Sprintf("phaseflow %s %s", b.Version, b.Revision)
	if b.Time != "" {
		line += " " + b.Time
	}
	return line + " " + b.Go
}
