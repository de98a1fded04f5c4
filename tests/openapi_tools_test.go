package tests

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOutsideToolsReadTheServedDocument: the OpenAPI document the binary serves is read by
// the tools clients use on it: redocly lints it without an error, and openapi-typescript
// generates types from it (for every path).
func TestOutsideToolsReadTheServedDocument(t *testing.T) {
	dir := npmClients(t)
	s := startServer(t)
	resp := s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/openapi.yaml", "", nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/openapi.yaml = %d", resp.StatusCode)
	}
	doc := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(doc, []byte(readAllString(t, resp)), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", name), args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run("redocly", "lint", "--format=summary", doc); !strings.Contains(out, "is valid") {
		t.Fatalf("redocly lint did not call the document valid:\n%s", out)
	}
	types := filepath.Join(t.TempDir(), "api.d.ts")
	run("openapi-typescript", doc, "-o", types)
	generated, err := os.ReadFile(types)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"/api/v1/sessions/{id}/messages"`, "TurnAnswer", "StatusEvent"} {
		if !strings.Contains(string(generated), want) {
			t.Errorf("the generated types lack %s", want)
		}
	}
}
