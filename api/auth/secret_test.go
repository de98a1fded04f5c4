package auth

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/config"
)

func TestLoadOrCreateSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	first, err := LoadOrCreateSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 32 {
		t.Errorf("secret has %d bytes, want 32", len(first))
	}
	assertMode(t, dir, 0o700)
	assertMode(t, filepath.Join(dir, SecretFile), 0o600)
	second, err := LoadOrCreateSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != string(second) {
		t.Error("second call returned a different secret")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s mode = %v, want %v", path, got, want)
	}
}

func TestLoadOrCreateSecretConcurrent(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = LoadOrCreateSecret(dir) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if string(got[i]) != string(got[0]) {
			t.Fatalf("call %d returned a different secret", i)
		}
	}
}

func TestLoadOrCreateSecretBadFile(t *testing.T) {
	tests := []struct{ name, content string }{
		{name: "not hex", content: "zz-not-hex\n"},
		{name: "too short", content: "abcd\n"},
		{name: "empty", content: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, SecretFile)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadOrCreateSecret(dir); err == nil {
				t.Fatal("malformed secret file accepted")
			}
			b, _ := os.ReadFile(path)
			if string(b) != tt.content {
				t.Error("malformed secret file was replaced")
			}
		})
	}
}

func TestFromConfig(t *testing.T) {
	tests := []struct {
		name   string
		secret config.Secret
		key    func(dir string) []byte
	}{
		{name: "configured secret", secret: "configured-secret-configured-secret",
			key: func(string) []byte { return []byte("configured-secret-configured-secret") }},
		{name: "secret from data dir", key: func(dir string) []byte {
			k, err := LoadOrCreateSecret(dir)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := config.Config{DataDir: dir, JWTSecret: tt.secret, JWTIssuer: "iss", JWTAudience: "aud"}
			a, err := FromConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := a.Sign("alice", RoleUser, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := New(tt.key(dir), "iss", "aud").Verify(tok); err != nil {
				t.Errorf("token does not verify with the expected key: %v", err)
			}
		})
	}
}
