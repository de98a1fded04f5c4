package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A build made from the source alone (a tarball: no .git), with the version passed at link
// time as the Dockerfile does, says its version on --version and in its build metric.
func TestTheVersionOfABuildWithoutGit(t *testing.T) {
	src := t.TempDir()
	// The checkout's files as a tarball holds them: tracked and new, without .git.
	archive := exec.Command("sh", "-c", "git ls-files -co --exclude-standard -z | grep -zv node_modules | tar -c --null -T - | tar -x -C "+src)
	archive.Dir = ".."
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("archive the checkout: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(src, ".git")); err == nil {
		t.Fatal("the archive has a .git")
	}
	bin := filepath.Join(t.TempDir(), "phaseflow")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version=9.8.7-test", "-o", bin, "./cmd/phaseflow")
	build.Dir, build.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "phaseflow 9.8.7-test ") {
		t.Fatalf("--version = %q, %v", out, err)
	}
	s := startServerOn(t, bin, func(string) []string { return nil })
	metrics := getPage(t, s.base+"/metrics")
	if !strings.Contains(metrics, `phaseflow_build_info{go_version="`) || !strings.Contains(metrics, `version="9.8.7-test"`) {
		t.Errorf("the build metric: %s", grepLines(metrics, "phaseflow_build_info"))
	}
}
