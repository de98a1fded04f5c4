package mcpcontext

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/phaseflow/phaseflow/config"
)

func mustKey(t *testing.T) *Key {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustSigner(t *testing.T, k *Key, also ...PublicKey) *Signer {
	t.Helper()
	s, err := NewSigner(k, "phaseflow", also...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustVerifier(t *testing.T, s *Signer) *Verifier {
	t.Helper()
	v, err := NewVerifier(s.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var alice = Context{UserID: "alice", SessionID: "s1", Phase: "strategy", StrategyID: "st1"}

// forge signs claims with any method and key, with the headers an honest token carries
// unless the case removes them.
func forge(t *testing.T, method jwt.SigningMethod, key any, kid string, typ string, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	if typ != "" {
		tok.Header["typ"] = typ
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func goodClaims(mod func(c *Claims)) *Claims {
	now := time.Now()
	c := &Claims{RegisteredClaims: jwt.RegisteredClaims{
		Subject: "alice", Audience: jwt.ClaimStrings{"strategy_engine"},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)),
	}, Type: Type, SessionID: "s1", Phase: "strategy"}
	if mod != nil {
		mod(c)
	}
	return c
}

// rawToken builds an unsigned-looking token with an arbitrary JSON payload, signed for real
// with key, so the payload can hold what the jwt library would never encode (exp as a string).
func rawToken(t *testing.T, k *Key, payload string) string {
	t.Helper()
	header := `{"alg":"EdDSA","kid":"` + k.Public().KID + `","typ":"` + HeaderType + `"}`
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	sig, err := jwt.SigningMethodEdDSA.Sign(signing, k.signer)
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + enc.EncodeToString(sig)
}

func TestSignAndVerify(t *testing.T) {
	k := mustKey(t)
	s := mustSigner(t, k)
	v := mustVerifier(t, s)
	tok, err := s.SignMCPContext(alice, "strategy_engine", DefaultTTL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(tok, "strategy_engine")
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "alice" || c.SessionID != "s1" || c.Phase != "strategy" || c.StrategyID != "st1" || c.Issuer != "phaseflow" {
		t.Fatalf("claims = %+v", c)
	}
	if time.Until(c.ExpiresAt.Time) > DefaultTTL {
		t.Fatalf("exp %v is beyond the TTL", c.ExpiresAt)
	}
}

func TestVerifyRefuses(t *testing.T) {
	k, other := mustKey(t), mustKey(t)
	s := mustSigner(t, k)
	v := mustVerifier(t, s)
	kid := k.Public().KID
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	userSecret := []byte("0123456789abcdef0123456789abcdef")
	good, err := s.SignMCPContext(alice, "strategy_engine", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		token    string
		audience string
		want     error
	}{
		{"another server's audience", good, "deployer", jwt.ErrTokenInvalidAudience},
		{"no audience asked", good, "", ErrInvalid},
		{"signed by a key not published", forge(t, jwt.SigningMethodEdDSA, other.signer, kid, HeaderType, goodClaims(nil)), "strategy_engine", jwt.ErrTokenSignatureInvalid},
		{"unknown kid", forge(t, jwt.SigningMethodEdDSA, other.signer, other.Public().KID, HeaderType, goodClaims(nil)), "strategy_engine", jwt.ErrTokenUnverifiable},
		{"ES256 by an outsider", forge(t, jwt.SigningMethodES256, ecKey, kid, HeaderType, goodClaims(nil)), "strategy_engine", jwt.ErrTokenUnverifiable},
		{"a user token (HS256)", forge(t, jwt.SigningMethodHS256, userSecret, "", "", jwt.RegisteredClaims{Subject: "alice", Audience: jwt.ClaimStrings{"strategy_engine"}, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}), "strategy_engine", jwt.ErrTokenSignatureInvalid},
		{"HS256 keyed with the public key", forge(t, jwt.SigningMethodHS256, []byte(k.Public().Key.(ed25519.PublicKey)), kid, HeaderType, goodClaims(nil)), "strategy_engine", jwt.ErrTokenSignatureInvalid},
		{"alg none", forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, HeaderType, goodClaims(nil)), "strategy_engine", jwt.ErrTokenSignatureInvalid},
		{"no explicit type", forge(t, jwt.SigningMethodEdDSA, k.signer, kid, "", goodClaims(nil)), "strategy_engine", jwt.ErrTokenUnverifiable},
		{"user token shape with the MCP key", forge(t, jwt.SigningMethodEdDSA, k.signer, kid, HeaderType, goodClaims(func(c *Claims) { c.Type = "" })), "strategy_engine", jwt.ErrTokenInvalidClaims},
		{"no kid", forge(t, jwt.SigningMethodEdDSA, k.signer, "", HeaderType, goodClaims(nil)), "strategy_engine", jwt.ErrTokenUnverifiable},
		{"expired", forge(t, jwt.SigningMethodEdDSA, k.signer, kid, HeaderType, goodClaims(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour)) })), "strategy_engine", jwt.ErrTokenExpired},
		{"no exp", forge(t, jwt.SigningMethodEdDSA, k.signer, kid, HeaderType, goodClaims(func(c *Claims) { c.ExpiresAt = nil })), "strategy_engine", jwt.ErrTokenRequiredClaimMissing},
		{"exp as a string", rawToken(t, k, `{"sub":"alice","aud":"strategy_engine","typ":"mcp_context","exp":"9999999999"}`), "strategy_engine", jwt.ErrTokenMalformed},
		{"no sub", forge(t, jwt.SigningMethodEdDSA, k.signer, kid, HeaderType, goodClaims(func(c *Claims) { c.Subject = "" })), "strategy_engine", jwt.ErrTokenRequiredClaimMissing},
		{"garbage", "a.b.c", "strategy_engine", jwt.ErrTokenMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Verify(tt.token, tt.audience)
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want ErrInvalid and %v", err, tt.want)
			}
		})
	}
}

// TestRotation walks the documented change-over: the new key is published first, then signs
// while the old one stays published, then the old one is dropped.
func TestRotation(t *testing.T) {
	oldKey, newKey := mustKey(t), mustKey(t)
	step1 := mustSigner(t, oldKey, newKey.Public())
	step2 := mustSigner(t, newKey, oldKey.Public())
	step3 := mustSigner(t, newKey)
	oldTok, err := step1.SignMCPContext(alice, "risk_lab", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	newTok, err := step2.SignMCPContext(alice, "risk_lab", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got := step2.KeyIDs(); len(got) != 2 || got[0] != newKey.Public().KID || got[1] != oldKey.Public().KID {
		t.Fatalf("KeyIDs during the change-over = %v", got)
	}
	for _, tc := range []struct {
		name   string
		jwks   *Signer
		token  string
		accept bool
	}{
		{"step 1 JWKS, old token", step1, oldTok, true},
		{"step 1 JWKS, new token (published ahead)", step1, newTok, true},
		{"step 2 JWKS, old token still in flight", step2, oldTok, true},
		{"step 2 JWKS, new token", step2, newTok, true},
		{"step 3 JWKS, old token", step3, oldTok, false},
		{"step 3 JWKS, new token", step3, newTok, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustVerifier(t, tc.jwks).Verify(tc.token, "risk_lab")
			if (err == nil) != tc.accept {
				t.Fatalf("Verify = %v, want accepted %v", err, tc.accept)
			}
		})
	}
}

func TestJWKSDocument(t *testing.T) {
	k, next := mustKey(t), mustKey(t)
	var doc struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(mustSigner(t, k, next.Public(), k.Public()).JWKS(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Keys) != 2 {
		t.Fatalf("%d keys published, want 2 (a repeated key once): %v", len(doc.Keys), doc.Keys)
	}
	for i, want := range []*Key{k, next} {
		got := doc.Keys[i]
		if got["kid"] != want.Public().KID || got["alg"] != "EdDSA" || got["kty"] != "OKP" || got["use"] != "sig" {
			t.Errorf("key %d = %v", i, got)
		}
		if _, private := got["d"]; private {
			t.Errorf("key %d publishes its private part", i)
		}
	}
}

func TestThumbprintRFC8037Example(t *testing.T) {
	// RFC 8037 appendix A.3: the thumbprint of the example Ed25519 public key.
	x, _ := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	got, err := thumbprint(ed25519.PublicKey(x))
	if err != nil {
		t.Fatal(err)
	}
	if got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("thumbprint = %s", got)
	}
}

func TestLoadOrCreateKeyKeepsOneKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	a, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.Public().KID != b.Public().KID {
		t.Fatal("a second start made a new key")
	}
	info, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", info.Mode().Perm())
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(dir); err == nil {
		t.Fatal("a corrupt key file was replaced or accepted")
	}
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFromConfigES256AndPublishedPublicKey configures an ES256 signing key (SEC 1 PEM) and
// publishes an Ed25519 public key (PKIX PEM) beside it.
func TestFromConfigES256AndPublishedPublicKey(t *testing.T) {
	dir := t.TempDir()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	next := mustKey(t)
	pubDER, err := x509.MarshalPKIXPublicKey(next.Public().Key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{DataDir: dir, JWTIssuer: "pf",
		MCPKeyFile:       writePEM(t, dir, "ec.pem", "EC PRIVATE KEY", ecDER),
		MCPPublishedKeys: []string{writePEM(t, dir, "next.pub.pem", "PUBLIC KEY", pubDER)}}
	s, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s.JWKS()), `"ES256"`) || len(s.KeyIDs()) != 2 || s.KeyIDs()[1] != next.Public().KID {
		t.Fatalf("JWKS = %s", s.JWKS())
	}
	tok, err := s.SignMCPContext(alice, "deployer", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mustVerifier(t, s).Verify(tok, "deployer"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a key was generated although one is configured: %v", err)
	}
	bad := cfg
	bad.MCPKeyFile = writePEM(t, dir, "pub-as-private.pem", "PUBLIC KEY", pubDER)
	if _, err := FromConfig(bad); err == nil {
		t.Fatal("a public key was accepted as the signing key")
	}
}

// TestRemoteVerifier checks the verifier an MCP server runs: it fetches the JWKS over HTTP
// and refetches when a token names a kid it has not seen (the change-over's step 2).
func TestRemoteVerifier(t *testing.T) {
	oldKey, newKey := mustKey(t), mustKey(t)
	current := mustSigner(t, oldKey)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(current.JWKS())
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := NewRemoteVerifier(ctx, srv.URL, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := current.SignMCPContext(alice, "risk_lab", time.Minute)
	if _, err := v.Verify(tok, "risk_lab"); err != nil {
		t.Fatal(err)
	}
	current = mustSigner(t, newKey, oldKey.Public())
	tok, _ = current.SignMCPContext(alice, "risk_lab", time.Minute)
	if _, err := v.Verify(tok, "risk_lab"); err != nil {
		t.Fatalf("a token with the new kid: %v", err)
	}
}
