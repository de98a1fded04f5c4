package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/api/auth"
)

func TestTokenCommand(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		secret   func(t *testing.T, dataDir string) []byte // key the token must verify with
		wantRole string
		wantTTL  time.Duration
	}{
		{
			name:     "defaults with generated secret",
			args:     []string{"--sub", "alice"},
			wantRole: auth.RoleUser,
			wantTTL:  24 * time.Hour,
		},
		{
			name:     "admin with ttl",
			args:     []string{"--sub", "alice", "--role", "admin", "--ttl", "1h"},
			wantRole: auth.RoleAdmin,
			wantTTL:  time.Hour,
		},
		{
			name:     "configured secret from env",
			args:     []string{"--sub", "alice"},
			env:      map[string]string{"PHASEFLOW_JWT_SECRET": "env-secret-env-secret-env-secret"},
			secret:   func(*testing.T, string) []byte { return []byte("env-secret-env-secret-env-secret") },
			wantRole: auth.RoleUser,
			wantTTL:  24 * time.Hour,
		},
		{
			name:     "configured secret from flag",
			args:     []string{"--sub", "alice", "--jwt-secret", "flag-secret-flag-secret-flag-sec"},
			env:      map[string]string{"PHASEFLOW_JWT_SECRET": "env-secret-env-secret-env-secret"},
			secret:   func(*testing.T, string) []byte { return []byte("flag-secret-flag-secret-flag-sec") },
			wantRole: auth.RoleUser,
			wantTTL:  24 * time.Hour,
		},
		{
			name:     "ttl at a configured maximum",
			args:     []string{"--sub", "alice", "--ttl", "1h"},
			env:      map[string]string{"PHASEFLOW_JWT_MAX_TTL": "1h"},
			wantRole: auth.RoleUser,
			wantTTL:  time.Hour,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			env := map[string]string{
				"PHASEFLOW_DATA_DIR":     dataDir,
				"PHASEFLOW_JWT_ISSUER":   "phaseflow",
				"PHASEFLOW_JWT_AUDIENCE": "chat",
			}
			for k, v := range tt.env {
				env[k] = v
			}
			var out, errOut bytes.Buffer
			sio := stdio{in: strings.NewReader(""), out: &out, err: &errOut, getenv: func(k string) string { return env[k] }}
			if code := run(t.Context(), sio, append([]string{"token"}, tt.args...)); code != 0 {
				t.Fatalf("exit %d, stderr: %s", code, errOut.String())
			}
			token, ok := strings.CutSuffix(out.String(), "\n")
			if !ok || strings.ContainsAny(token, " \n") || errOut.Len() != 0 {
				t.Fatalf("stdout = %q, stderr = %q; want just a token and a newline", out.String(), errOut.String())
			}
			secret := loadSecret(t, dataDir)
			if tt.secret != nil {
				secret = tt.secret(t, dataDir)
			}
			claims, err := auth.New(secret, "phaseflow", "chat").Verify(token)
			if err != nil {
				t.Fatalf("token does not verify: %v", err)
			}
			if claims.Subject != "alice" || claims.Role != tt.wantRole {
				t.Errorf("claims sub %q role %q, want alice %q", claims.Subject, claims.Role, tt.wantRole)
			}
			if ttl := claims.ExpiresAt.Sub(claims.IssuedAt.Time); ttl != tt.wantTTL {
				t.Errorf("ttl = %v, want %v", ttl, tt.wantTTL)
			}
		})
	}
}

// loadSecret reads the secret the server would use from dataDir.
func loadSecret(t *testing.T, dataDir string) []byte {
	t.Helper()
	s, err := auth.LoadOrCreateSecret(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTokenCommandUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "help", args: []string{"-h"}, wantCode: 0, wantStdout: "--sub"},
		{name: "help lists config flags", args: []string{"--help"}, wantCode: 0, wantStdout: "$PHASEFLOW_JWT_SECRET"},
		{name: "missing sub", args: nil, wantCode: 2, wantStderr: "--sub is required"},
		{name: "unknown role", args: []string{"--sub", "alice", "--role", "root"}, wantCode: 2, wantStderr: `unknown role "root"`},
		{name: "zero ttl", args: []string{"--sub", "alice", "--ttl", "0s"}, wantCode: 2, wantStderr: "--ttl: must be positive"},
		{name: "bad ttl", args: []string{"--sub", "alice", "--ttl", "soon"}, wantCode: 2, wantStderr: "-ttl"},
		{name: "unknown flag", args: []string{"--sub", "alice", "--nope"}, wantCode: 2, wantStderr: "-nope"},
		{name: "bad environment", args: []string{"--sub", "alice"}, env: map[string]string{"PHASEFLOW_LOG_LEVEL": "loud"}, wantCode: 2, wantStderr: "PHASEFLOW_LOG_LEVEL"},
		{name: "ttl over the default maximum", args: []string{"--sub", "alice", "--ttl", "25h"}, wantCode: 2, wantStderr: "--ttl 25h0m0s is longer than the server accepts (PHASEFLOW_JWT_MAX_TTL / --jwt-max-ttl = 24h0m0s)"},
		{name: "ttl over a configured maximum", args: []string{"--sub", "alice", "--ttl", "2h"}, env: map[string]string{"PHASEFLOW_JWT_MAX_TTL": "1h"}, wantCode: 2, wantStderr: "= 1h0m0s"},
		{name: "identity provider without a secret", args: []string{"--sub", "alice"}, env: map[string]string{"PHASEFLOW_JWT_JWKS_URL": "https://idp.example/jwks"}, wantCode: 1, wantStderr: "accepts only the identity provider's tokens"},
		{name: "unusable data dir", args: []string{"--sub", "alice", "--data-dir", "/dev/null/x"}, wantCode: 1, wantStderr: "secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"PHASEFLOW_DATA_DIR": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			var out, errOut bytes.Buffer
			sio := stdio{in: strings.NewReader(""), out: &out, err: &errOut, getenv: func(k string) string { return env[k] }}
			code := run(t.Context(), sio, append([]string{"token"}, tt.args...))
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tt.wantCode, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tt.wantStdout) || !strings.Contains(errOut.String(), tt.wantStderr) {
				t.Errorf("stdout %q (want %q), stderr %q (want %q)", out.String(), tt.wantStdout, errOut.String(), tt.wantStderr)
			}
			if tt.wantCode != 0 && out.Len() != 0 {
				t.Errorf("failure wrote to stdout: %q", out.String())
			}
		})
	}
}
