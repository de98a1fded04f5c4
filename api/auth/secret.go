package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/phaseflow/phaseflow/config"
)

// SecretFile is the name of the generated HS256 secret inside the data dir.
const SecretFile = "jwt-secret"

// secretLen is the size of a generated secret: 256 bits, HS256's hash size.
const secretLen = 32

// OptionsFromConfig returns the options the server and "phaseflow token" share: the
// configured secret (used as raw bytes) when set, else the one kept in the data dir, created
// on first use; the issuer, audience and maximum lifetime. HS256 bearer tokens are accepted
// unless an identity provider is configured without an explicit secret: then only the
// provider's tokens count, and the generated secret signs stream tokens alone. The caller
// adds ProviderKeys and DeniedKeyIDs, which need the running server.
func OptionsFromConfig(cfg config.Config) (Options, error) {
	secret := []byte(cfg.JWTSecret.Reveal())
	if len(secret) == 0 {
		var err error
		if secret, err = LoadOrCreateSecret(cfg.DataDir); err != nil {
			return Options{}, err
		}
	}
	return Options{
		Secret: secret, Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, MaxTTL: cfg.JWTMaxTTL,
		HS256Bearer: cfg.JWTJWKSURL == "" || cfg.JWTSecret.IsSet(),
	}, nil
}

// FromConfig returns an Authority built from [OptionsFromConfig] alone, enough to sign
// (phaseflow token) and to check Phaseflow's own HS256 tokens. Both commands go through
// OptionsFromConfig so their tokens always agree.
func FromConfig(cfg config.Config) (*Authority, error) {
	o, err := OptionsFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	return NewWithOptions(o), nil
}

// LoadOrCreateSecret returns the hex-encoded secret in <dataDir>/jwt-secret, creating the
// folder (0700) and a file of 32 random bytes (0600) when there is none, so a local server
// works without configuration and keeps its tokens valid across restarts.
//
// A new file is written to a temporary name and then hard-linked into place, which fails if
// another process created the secret first; that secret is then read and used, so two
// processes starting together agree on one secret. A present but unreadable or malformed file
// is an error rather than being replaced, since replacing it would invalidate every token.
func LoadOrCreateSecret(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, SecretFile)
	secret, err := readSecret(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("auth: create data dir: %w", err)
	}
	secret = make([]byte, secretLen)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("auth: generate secret: %w", err)
	}
	won, err := publishSecret(path, secret)
	if err != nil {
		return nil, err
	}
	if !won {
		return readSecret(path)
	}
	return secret, nil
}

// readSecret reads and decodes an existing secret file; a missing file gives fs.ErrNotExist.
func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("auth: read secret: %w", err)
	}
	secret, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil {
		return nil, fmt.Errorf("auth: secret file %s: not hex: %w", path, err)
	}
	if len(secret) < secretLen {
		return nil, fmt.Errorf("auth: secret file %s: %d bytes, want at least %d", path, len(secret), secretLen)
	}
	return secret, nil
}

// publishSecret writes secret to a temporary file beside path and moves it into place. It
// reports false when another writer's file is already there (that one wins).
func publishSecret(path string, secret []byte) (bool, error) {
	tmp, err := writeTemp(filepath.Dir(path), hex.EncodeToString(secret)+"\n")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		// Some filesystems cannot hard-link; rename is atomic but may replace a file a
		// concurrent process has just created.
		if err := os.Rename(tmp, path); err != nil {
			return false, fmt.Errorf("auth: store secret: %w", err)
		}
	}
	return true, nil
}

// writeTemp writes content to a new 0600 file in dir, synced to disk, and returns its name.
func writeTemp(dir, content string) (string, error) {
	f, err := os.CreateTemp(dir, "."+SecretFile+"-*")
	if err != nil {
		return "", fmt.Errorf("auth: store secret: %w", err)
	}
	name := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.WriteString(content)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("auth: store secret: %w", err)
	}
	return name, nil
}
