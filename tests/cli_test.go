package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

// TestVersionNamesTheRevision: a go build from a git checkout prints its commit with
// --version and with the version command.
func TestVersionNamesTheRevision(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v (the tests run from a git checkout)", err)
	}
	bin := filepath.Join(t.TempDir(), "phaseflow")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "../cmd/phaseflow").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || !strings.Contains(string(out), strings.TrimSpace(string(head))) {
			t.Fatalf("phaseflow %s = %q, %v; want the revision %s", args[0], out, err, head)
		}
	}
}

// TestComposeFile reads docker-compose.yml as Compose does: every PHASEFLOW_* setting it
// names is one the server reads, the port is published on loopback only, and the health
// check is the binary's own (the image has no shell).
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Ports       []string          `yaml:"ports"`
			Environment map[string]string `yaml:"environment"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	pf, ok := compose.Services["phaseflow"]
	if !ok {
		t.Fatal("no phaseflow service")
	}
	known := settingNames(t)
	for name := range pf.Environment {
		if !known[name] {
			t.Errorf("docker-compose.yml sets %s, which no setting reads", name)
		}
	}
	for _, p := range pf.Ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("port %q is published on every interface", p)
		}
	}
	if strings.Join(pf.Healthcheck.Test, " ") != "CMD /phaseflow healthcheck" {
		t.Errorf("health check %v, want the binary's own", pf.Healthcheck.Test)
	}
	docker, err := os.ReadFile("../Dockerfile")
	if err != nil || !strings.Contains(string(docker), `HEALTHCHECK`) || !strings.Contains(string(docker), `"/phaseflow", "healthcheck"`) {
		t.Errorf("the Dockerfile has no HEALTHCHECK running phaseflow healthcheck (%v)", err)
	}
}

// settingNames are the variables phaseflow serve reads, as its help lists them.
func settingNames(t *testing.T) map[string]bool {
	t.Helper()
	out, _ := exec.Command(binary, "serve", "-h").CombinedOutput()
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`PHASEFLOW_[A-Z0-9_]+`).FindAllString(string(out), -1) {
		names[m] = true
	}
	if len(names) < 20 {
		t.Fatalf("serve -h lists %d settings:\n%s", len(names), out)
	}
	return names
}
