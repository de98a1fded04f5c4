package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/phaseflow/phaseflow/internal/jwkstest"
	"github.com/phaseflow/phaseflow/mcpcontext"
)

// provider is an identity provider on loopback: an RSA and an EC key published as a JWK Set.
type provider struct {
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
	url string
}

func newProvider(t *testing.T, extra ...mcpcontext.PublicKey) *provider {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := append([]mcpcontext.PublicKey{
		{Key: &rk.PublicKey, KID: "rsa-1", Alg: "RS256"},
		{Key: &ek.PublicKey, KID: "ec-1", Alg: "ES256"},
	}, extra...)
	return &provider{rsa: rk, ec: ek, url: jwkstest.Serve(t, keys...)}
}

func (p *provider) authority(t *testing.T, o Options) *Authority {
	t.Helper()
	keys, err := ProviderKeys(p.url, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(keys.Close)
	o.ProviderKeys = keys.Keyfunc
	return NewWithOptions(o)
}

// signed mints claims with method and key under kid.
func signed(t *testing.T, method jwt.SigningMethod, key any, kid string, c jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestProviderTokens(t *testing.T) {
	p := newProvider(t)
	a := p.authority(t, Options{Secret: testSecret, Issuer: "https://idp.example", Audience: "phaseflow"})
	idp := func(mod func(c *Claims)) *Claims {
		return claims(func(c *Claims) {
			c.Issuer, c.Audience = "https://idp.example", jwt.ClaimStrings{"phaseflow"}
			if mod != nil {
				mod(c)
			}
		})
	}
	rsaPub, err := x509.MarshalPKIXPublicKey(&p.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPub})
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		token   string
		wantErr error
	}{
		{"RS256 from the provider", signed(t, jwt.SigningMethodRS256, p.rsa, "rsa-1", idp(nil)), nil},
		{"ES256 from the provider", signed(t, jwt.SigningMethodES256, p.ec, "ec-1", idp(nil)), nil},
		{"RS256 without kid", signed(t, jwt.SigningMethodRS256, p.rsa, "", idp(nil)), nil},
		{"RS256 by another key under the provider's kid", signed(t, jwt.SigningMethodRS256, otherRSA, "rsa-1", idp(nil)), jwt.ErrTokenSignatureInvalid},
		{"RS256 with an unknown kid", signed(t, jwt.SigningMethodRS256, otherRSA, "rsa-2", idp(nil)), jwt.ErrTokenUnverifiable},
		{"HS256 keyed with the provider's public key", signed(t, jwt.SigningMethodHS256, rsaPEM, "rsa-1", idp(nil)), jwt.ErrTokenSignatureInvalid},
		{"HS256 bearer while a provider is configured", signed(t, jwt.SigningMethodHS256, testSecret, "", idp(nil)), jwt.ErrTokenSignatureInvalid},
		{"ES256 token under the RSA kid", signed(t, jwt.SigningMethodES256, p.ec, "rsa-1", idp(nil)), jwt.ErrTokenUnverifiable},
		{"RS384", signed(t, jwt.SigningMethodRS384, p.rsa, "rsa-1", idp(nil)), jwt.ErrTokenSignatureInvalid},
		{"PS256", signed(t, jwt.SigningMethodPS256, p.rsa, "rsa-1", idp(nil)), jwt.ErrTokenSignatureInvalid},
		{"wrong issuer", signed(t, jwt.SigningMethodRS256, p.rsa, "rsa-1", idp(func(c *Claims) { c.Issuer = "https://evil.example" })), jwt.ErrTokenInvalidIssuer},
		{"wrong audience", signed(t, jwt.SigningMethodRS256, p.rsa, "rsa-1", idp(func(c *Claims) { c.Audience = jwt.ClaimStrings{"billing"} })), jwt.ErrTokenInvalidAudience},
		{"too long", signed(t, jwt.SigningMethodRS256, p.rsa, "rsa-1", idp(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(c.IssuedAt.Add(48 * time.Hour)) })), ErrLifetimeTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := a.Verify(tt.token)
			if tt.wantErr == nil {
				if err != nil || c.Subject != "alice" {
					t.Fatalf("Verify = %+v, %v", c, err)
				}
				return
			}
			if !errors.Is(err, ErrUnauthorized) || !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify = %v, want ErrUnauthorized and %v", err, tt.wantErr)
			}
		})
	}
	// Stream tokens stay HS256 with the server's secret even when HS256 bearer tokens are off.
	st, err := a.SignStream("alice", "m1", DefaultStreamTTL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.VerifyStream(st, "m1"); err != nil {
		t.Fatalf("stream token with a provider configured: %v", err)
	}
}

// TestUserAndMCPTokensNeverCross proves the separation both ways, even against a provider
// whose JWK Set (by mistake or malice) also lists the x-mcp-context key: an x-mcp-context
// token or any token signed with that key is never a user token, and no user token passes
// the MCP verifier.
func TestUserAndMCPTokensNeverCross(t *testing.T) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	mk, err := mcpcontext.ParseKeyPEM(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := mcpcontext.NewSigner(mk, "")
	if err != nil {
		t.Fatal(err)
	}
	mcpVerifier, err := mcpcontext.NewVerifier(signer.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	p := newProvider(t, mk.Public())
	a := p.authority(t, Options{Secret: testSecret, HS256Bearer: true, DeniedKeyIDs: signer.KeyIDs()})

	mcpTok, err := signer.SignMCPContext(mcpcontext.Context{UserID: "alice", SessionID: "s1"}, "strategy_engine", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	userShaped := signed(t, jwt.SigningMethodES256, ecKey, mk.Public().KID, claims(func(c *Claims) { c.Role = RoleAdmin }))
	for name, tok := range map[string]string{"x-mcp-context token": mcpTok, "admin token signed with the MCP key": userShaped} {
		if _, err := a.Verify(tok); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("%s accepted as a user token: %v", name, err)
		}
	}

	hsUser, err := a.Sign("alice", RoleAdmin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	aud := func(c *Claims) { c.Audience = jwt.ClaimStrings{"strategy_engine"}; c.Type = mcpcontext.Type }
	for name, tok := range map[string]string{
		"HS256 user token":                   hsUser,
		"provider RS256 token shaped as MCP": signed(t, jwt.SigningMethodRS256, p.rsa, "rsa-1", claims(aud)),
		"provider ES256 token shaped as MCP": signed(t, jwt.SigningMethodES256, p.ec, "ec-1", claims(aud)),
	} {
		if _, err := mcpVerifier.Verify(tok, "strategy_engine"); !errors.Is(err, mcpcontext.ErrInvalid) {
			t.Errorf("%s accepted as an x-mcp-context token: %v", name, err)
		}
	}
	var doc struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(signer.JWKS(), &doc); err != nil || len(doc.Keys) != 1 {
		t.Fatalf("JWKS = %s", signer.JWKS())
	}
}
