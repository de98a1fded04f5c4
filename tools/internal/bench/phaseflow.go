package bench

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build builds the phaseflow binary of the checkout the tool runs from into dir.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "phaseflow")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/phaseflow").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build phaseflow (run from the checkout's root): %w\n%s", err, out)
	}
	return bin, nil
}

// Token signs a user token with the secret in env, as the server started with env checks it
// (phaseflow token).
func Token(bin string, env []string) (string, error) {
	cmd := exec.Command(bin, "token", "--sub", "bench", "--ttl", "2h")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("phaseflow token: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
