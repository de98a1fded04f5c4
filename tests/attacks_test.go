package tests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/internal/jwkstest"
	"github.com/phaseflow/phaseflow/mcpcontext"
)

// The attack table runs against a server configured as a production deployment would be:
// an identity provider's JWK Set, a required issuer and audience, the HS256 secret for
// scripts, CORS for one origin, and tight header, body and per-user limits.
const (
	attackIssuer   = "phaseflow-e2e"
	attackAudience = "chat"
	attackOrigin   = "http://127.0.0.1:5999"
)

// identityProvider is a loopback IdP: an RSA and an EC key published as a JWK Set.
type identityProvider struct {
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
	url string
}

func startIdentityProvider(t *testing.T) *identityProvider {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	url := jwkstest.Serve(t,
		mcpcontext.PublicKey{Key: &rk.PublicKey, KID: "idp-rsa", Alg: "RS256"},
		mcpcontext.PublicKey{Key: &ek.PublicKey, KID: "idp-ec", Alg: "ES256"})
	return &identityProvider{rsa: rk, ec: ek, url: url}
}

// claimsFor are valid claims for sub on the attack server, changed by mod.
func claimsFor(sub string, mod func(c *auth.Claims)) *auth.Claims {
	now := time.Now()
	c := &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{
		Subject: sub, Issuer: attackIssuer, Audience: jwt.ClaimStrings{attackAudience},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
	}}
	if mod != nil {
		mod(c)
	}
	return c
}

// mintJWT signs claims with method and key; headers are added to the JOSE header.
func mintJWT(t *testing.T, method jwt.SigningMethod, key any, claims jwt.Claims, headers map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range headers {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rawJWT signs an arbitrary JSON payload with HS256 and the test secret: it can hold what
// the jwt library would never encode (a time claim as a string).
func rawJWT(t *testing.T, payload string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(payload))
	sig, err := jwt.SigningMethodHS256.Sign(signing, []byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + enc.EncodeToString(sig)
}

// tamper swaps the payload of token for payload, keeping its header and signature.
func tamper(token, payload string) string {
	parts := strings.Split(token, ".")
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + parts[2]
}

// attackServer is the hardened server and what the attacks need to know about it.
type attackServer struct {
	*server
	idp     *identityProvider
	auth    *auth.Authority // the server's HS256 secret, issuer and audience
	dataDir string
}

func startAttackServer(t *testing.T) *attackServer {
	t.Helper()
	idp := startIdentityProvider(t)
	dataDir := t.TempDir()
	s := startServer(t,
		"PHASEFLOW_DATA_DIR="+dataDir,
		"PHASEFLOW_JWT_ISSUER="+attackIssuer, "PHASEFLOW_JWT_AUDIENCE="+attackAudience,
		"PHASEFLOW_JWT_JWKS_URL="+idp.url, "PHASEFLOW_JWT_MAX_TTL=24h",
		"PHASEFLOW_CORS_ORIGINS="+attackOrigin,
		"PHASEFLOW_MAX_HEADER_BYTES=8192", "PHASEFLOW_HEADER_TIMEOUT=1s", "PHASEFLOW_BODY_TIMEOUT=1s",
		"PHASEFLOW_MAX_TURNS_PER_USER=1", "PHASEFLOW_USER_MESSAGE_BURST=3", "PHASEFLOW_USER_MESSAGE_RATE=1",
		"PHASEFLOW_METRICS_TOKEN=metrics-e2e-token",
	)
	return &attackServer{server: s, idp: idp, auth: auth.New([]byte(testSecret), attackIssuer, attackAudience), dataDir: dataDir}
}

// userToken signs a valid HS256 token for sub on the attack server.
func (a *attackServer) userToken(t *testing.T, sub, role string) string {
	t.Helper()
	tok, err := a.auth.Sign(sub, role, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// mcpSigner signs with the server's own x-mcp-context key, read from its data dir: what a
// thief of that key, or Phaseflow itself, could sign.
func (a *attackServer) mcpSigner(t *testing.T) *mcpcontext.Signer {
	t.Helper()
	k, err := mcpcontext.ReadKeyFile(filepath.Join(a.dataDir, mcpcontext.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpcontext.NewSigner(k, attackIssuer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tokenAttack is one attempt to get in with a token.
type tokenAttack struct {
	name  string
	path  string // default GET /api/v1/sessions
	authz string // Authorization header value; "" sends none
	want  int
}

// TestTokenAttacks tries every token attack against the real binary; each case is named,
// so one that comes back fails by name.
func TestTokenAttacks(t *testing.T) {
	a := startAttackServer(t)
	alice := a.userToken(t, "alice", auth.RoleUser)
	sid := a.newSession(alice, "en")
	turn := a.post(alice, sid, "Draft a momentum strategy for BTC")
	waitFinished(t, a.server, alice, turn.MessageID)
	other := a.post(alice, sid, "and one more")
	waitFinished(t, a.server, alice, other.MessageID)
	mcpFromUpstream := mcpTokenSentUpstream(t, a.server)

	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaPub, _ := x509.MarshalPKIXPublicKey(&a.idp.rsa.PublicKey)
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: rsaPub})
	hs := func(mod func(c *auth.Claims)) string {
		return mintJWT(t, jwt.SigningMethodHS256, []byte(testSecret), claimsFor("alice", mod), nil)
	}
	bearer := func(tok string) string { return "Bearer " + tok }
	now := time.Now().Unix()
	mcpSigned, err := a.mcpSigner(t).SignMCPContext(mcpcontext.Context{UserID: "alice", SessionID: sid, Phase: "strategy"}, "strategy_engine", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	mcpKey, _ := mcpcontext.ReadKeyFile(filepath.Join(a.dataDir, mcpcontext.KeyFile))
	mcpPEM, _ := mcpcontext.MarshalKeyPEM(mcpKey)
	edKey, _ := x509.ParsePKCS8PrivateKey(pemBytes(mcpPEM))

	attacks := []tokenAttack{
		{name: "control: HS256 user token", authz: bearer(alice), want: 200},
		{name: "control: RS256 from the identity provider", authz: bearer(mintJWT(t, jwt.SigningMethodRS256, a.idp.rsa, claimsFor("alice", nil), map[string]any{"kid": "idp-rsa"})), want: 200},
		{name: "control: ES256 from the identity provider", authz: bearer(mintJWT(t, jwt.SigningMethodES256, a.idp.ec, claimsFor("alice", nil), map[string]any{"kid": "idp-ec"})), want: 200},
		{name: "no token", want: 401},
		{name: "not a JWT", authz: "Bearer not.a.jwt", want: 401},
		{name: "Basic scheme", authz: "Basic YWxpY2U6cGFzcw==", want: 401},
		{name: "empty bearer", authz: "Bearer ", want: 401},
		{name: "alg none", authz: bearer(mintJWT(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claimsFor("alice", nil), nil)), want: 401},
		{name: "alg NONE with an empty signature", authz: bearer(b64(`{"alg":"NONE","typ":"JWT"}`) + "." + b64(fmt.Sprintf(`{"sub":"alice","iss":%q,"aud":%q,"exp":%d}`, attackIssuer, attackAudience, now+3600)) + "."), want: 401},
		{name: "bad signature (another secret)", authz: bearer(mintJWT(t, jwt.SigningMethodHS256, []byte("attacker-secret-0123456789abcdef"), claimsFor("alice", nil), nil)), want: 401},
		{name: "payload tampered to another user", authz: bearer(tamper(alice, fmt.Sprintf(`{"sub":"mallory","iss":%q,"aud":[%q],"exp":%d,"iat":%d}`, attackIssuer, attackAudience, now+3600, now))), want: 401},
		{name: "role tampered to admin", authz: bearer(tamper(alice, fmt.Sprintf(`{"sub":"alice","role":"admin","iss":%q,"aud":[%q],"exp":%d,"iat":%d}`, attackIssuer, attackAudience, now+3600, now))), path: "/api/v1/llm/prompts", want: 401},
		{name: "HS384 with the secret", authz: bearer(mintJWT(t, jwt.SigningMethodHS384, []byte(testSecret), claimsFor("alice", nil), nil)), want: 401},
		{name: "HS512 with the secret", authz: bearer(mintJWT(t, jwt.SigningMethodHS512, []byte(testSecret), claimsFor("alice", nil), nil)), want: 401},
		{name: "RS256 by an unknown key", authz: bearer(mintJWT(t, jwt.SigningMethodRS256, otherRSA, claimsFor("alice", nil), map[string]any{"kid": "attacker"})), want: 401},
		{name: "RS256 by another key under the provider's kid", authz: bearer(mintJWT(t, jwt.SigningMethodRS256, otherRSA, claimsFor("alice", nil), map[string]any{"kid": "idp-rsa"})), want: 401},
		{name: "HS/RS confusion: HS256 keyed with the provider's RSA public key", authz: bearer(mintJWT(t, jwt.SigningMethodHS256, rsaPEM, claimsFor("alice", nil), map[string]any{"kid": "idp-rsa"})), want: 401},
		{name: "ES256 under the RSA kid", authz: bearer(mintJWT(t, jwt.SigningMethodES256, a.idp.ec, claimsFor("alice", nil), map[string]any{"kid": "idp-rsa"})), want: 401},
		{name: "PS256 by the provider's RSA key", authz: bearer(mintJWT(t, jwt.SigningMethodPS256, a.idp.rsa, claimsFor("alice", nil), map[string]any{"kid": "idp-rsa"})), want: 401},
		{name: "jku pointing at the attacker's key set", authz: bearer(mintJWT(t, jwt.SigningMethodRS256, otherRSA, claimsFor("alice", nil), map[string]any{"kid": "attacker", "jku": "http://127.0.0.1:9/jwks.json"})), want: 401},
		{name: "kid path traversal with an empty HMAC key", authz: bearer(mintJWT(t, jwt.SigningMethodHS256, []byte{0}, claimsFor("alice", nil), map[string]any{"kid": "../../../../dev/null"})), want: 401},
		{name: "missing exp", authz: bearer(hs(func(c *auth.Claims) { c.ExpiresAt = nil })), want: 401},
		{name: "past exp", authz: bearer(hs(func(c *auth.Claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour)) })), want: 401},
		{name: "exp as a string", authz: bearer(rawJWT(t, fmt.Sprintf(`{"sub":"alice","iss":%q,"aud":%q,"exp":"9999999999"}`, attackIssuer, attackAudience))), want: 401},
		{name: "exp null", authz: bearer(rawJWT(t, fmt.Sprintf(`{"sub":"alice","iss":%q,"aud":%q,"exp":null}`, attackIssuer, attackAudience))), want: 401},
		{name: "iat in the future", authz: bearer(hs(func(c *auth.Claims) { c.IssuedAt = jwt.NewNumericDate(time.Now().Add(time.Hour)) })), want: 401},
		{name: "nbf in the future", authz: bearer(hs(func(c *auth.Claims) { c.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Hour)) })), want: 401},
		{name: "lifetime over the maximum (exp - iat = 48h)", authz: bearer(hs(func(c *auth.Claims) { c.ExpiresAt = jwt.NewNumericDate(c.IssuedAt.Add(48 * time.Hour)) })), want: 401},
		{name: "no iat and exp a year away", authz: bearer(hs(func(c *auth.Claims) { c.IssuedAt = nil; c.ExpiresAt = jwt.NewNumericDate(time.Now().AddDate(1, 0, 0)) })), want: 401},
		{name: "provider token with a 30-day lifetime", authz: bearer(mintJWT(t, jwt.SigningMethodRS256, a.idp.rsa, claimsFor("alice", func(c *auth.Claims) { c.ExpiresAt = jwt.NewNumericDate(c.IssuedAt.Add(30 * 24 * time.Hour)) }), map[string]any{"kid": "idp-rsa"})), want: 401},
		{name: "missing sub", authz: bearer(hs(func(c *auth.Claims) { c.Subject = "" })), want: 401},
		{name: "unknown role", authz: bearer(hs(func(c *auth.Claims) { c.Role = "root" })), want: 401},
		{name: "wrong iss", authz: bearer(hs(func(c *auth.Claims) { c.Issuer = "evil" })), want: 401},
		{name: "missing iss", authz: bearer(hs(func(c *auth.Claims) { c.Issuer = "" })), want: 401},
		{name: "wrong aud", authz: bearer(hs(func(c *auth.Claims) { c.Audience = jwt.ClaimStrings{"billing"} })), want: 401},
		{name: "missing aud", authz: bearer(hs(func(c *auth.Claims) { c.Audience = nil })), want: 401},
		{name: "x-mcp-context token the upstream received, as bearer", authz: bearer(mcpFromUpstream), want: 401},
		{name: "x-mcp-context token signed with the server's MCP key, as bearer", authz: bearer(mcpSigned), want: 401},
		{name: "admin token signed with the server's MCP key", authz: bearer(mintJWT(t, jwt.SigningMethodEdDSA, edKey, claimsFor("alice", func(c *auth.Claims) { c.Role = auth.RoleAdmin }), map[string]any{"kid": mcpKey.Public().KID})), path: "/api/v1/llm/prompts", want: 401},
		{name: "stream token as bearer", authz: bearer(turn.StreamToken), want: 401},
		{name: "stream token on its events route as bearer", authz: bearer(turn.StreamToken), path: turn.EventsURL, want: 401},
		{name: "stream token for another message", path: other.EventsURL + "?stream_token=" + turn.StreamToken, want: 401},
		{name: "stream token on another route", path: "/api/v1/sessions?stream_token=" + turn.StreamToken, want: 401},
		{name: "bearer token as stream_token", path: turn.EventsURL + "?stream_token=" + alice, want: 401},
		{name: "user token on an admin route", authz: bearer(alice), path: "/api/v1/llm/prompts", want: 403},
		{name: "user token as the metrics token", authz: bearer(alice), path: "/metrics", want: 401},
	}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			path := at.path
			if path == "" {
				path = "/api/v1/sessions"
			}
			var e errorBody
			var headers []string
			if at.authz != "" {
				headers = []string{"Authorization", at.authz}
			}
			resp := a.call(ctxFor(t, 10*time.Second), http.MethodGet, path, "", nil, nil, headers...)
			if resp.StatusCode != at.want {
				t.Fatalf("%s %s answered %d, want %d: %s", http.MethodGet, path, resp.StatusCode, at.want, readAllString(t, resp))
			}
			if at.want >= 400 {
				if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error.Code == "" {
					t.Fatalf("answer %d is not a JSON error: %v", resp.StatusCode, err)
				}
			}
		})
	}

	// The other direction: what an MCP server verifies with the published keys never
	// accepts a user token, and accepts the real x-mcp-context token.
	verifier := a.mcpVerifier()
	if _, err := verifier.Verify(mcpFromUpstream, "strategy_engine"); err != nil {
		t.Errorf("the real x-mcp-context token does not verify with the published keys: %v", err)
	}
	for name, tok := range map[string]string{
		"HS256 user token":          alice,
		"provider RS256 user token": mintJWT(t, jwt.SigningMethodRS256, a.idp.rsa, claimsFor("alice", func(c *auth.Claims) { c.Audience = jwt.ClaimStrings{"strategy_engine"} }), map[string]any{"kid": "idp-rsa"}),
		"stream token":              turn.StreamToken,
	} {
		if _, err := verifier.Verify(tok, "strategy_engine"); err == nil {
			t.Errorf("MCP verifier accepted a %s", name)
		}
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func pemBytes(b []byte) []byte {
	block, _ := pem.Decode(b)
	return block.Bytes
}

// mcpTokenSentUpstream returns an x-mcp-context token the scripted upstream received.
func mcpTokenSentUpstream(t *testing.T, s *server) string {
	t.Helper()
	for _, rec := range allRecorded(t, s) {
		for _, raw := range anyList(rec.Body["tools"]) {
			tool, _ := raw.(map[string]any)
			h, _ := tool["headers"].(map[string]any)
			if tok, _ := h["x-mcp-context"].(string); tok != "" && tool["server_label"] == "strategy_engine" {
				return tok
			}
		}
	}
	t.Fatal("the upstream received no x-mcp-context token")
	return ""
}
