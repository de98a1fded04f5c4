package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// mint signs arbitrary claims the way an attacker or another issuer could.
func mint(t *testing.T, method jwt.SigningMethod, key any, claims jwt.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatalf("mint: %v", err)
	}
	return s
}

// claims returns valid bearer claims for alice, to be altered by a test case.
func claims(mod func(c *Claims)) *Claims {
	now := time.Now()
	c := &Claims{RegisteredClaims: jwt.RegisteredClaims{
		Subject:   "alice",
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
	}}
	if mod != nil {
		mod(c)
	}
	return c
}

// rawHS256 signs an arbitrary JSON payload with testSecret, so it can hold what the jwt
// library would never encode (a time claim as a string).
func rawHS256(t *testing.T, payload string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(payload))
	sig, err := jwt.SigningMethodHS256.Sign(signing, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + enc.EncodeToString(sig)
}

// withHeader mints a valid HS256 user token with one extra header field.
func withHeader(t *testing.T, key, value string) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil))
	tok.Header[key] = value
	s, err := tok.SignedString(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerify(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	plain := New(testSecret, "", "")
	strict := New(testSecret, "phaseflow", "chat")
	streamTok, err := plain.SignStream("alice", "m1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		a        *Authority
		token    string
		wantErr  error // nil means success
		wantRole string
	}{
		{name: "valid user token", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(nil)), wantRole: RoleUser},
		{name: "valid admin token", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Role = RoleAdmin })), wantRole: RoleAdmin},
		{name: "explicit user role", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Role = RoleUser })), wantRole: RoleUser},
		{name: "alg none", a: plain, token: mint(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil)), wantErr: jwt.ErrTokenSignatureInvalid},
		{name: "HS384", a: plain, token: mint(t, jwt.SigningMethodHS384, testSecret, claims(nil)), wantErr: jwt.ErrTokenSignatureInvalid},
		{name: "HS512", a: plain, token: mint(t, jwt.SigningMethodHS512, testSecret, claims(nil)), wantErr: jwt.ErrTokenSignatureInvalid},
		{name: "RS256", a: plain, token: mint(t, jwt.SigningMethodRS256, rsaKey, claims(nil)), wantErr: jwt.ErrTokenSignatureInvalid},
		{name: "bad signature", a: plain, token: mint(t, jwt.SigningMethodHS256, []byte("another secret of enough length!"), claims(nil)), wantErr: jwt.ErrTokenSignatureInvalid},
		{name: "missing exp", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.ExpiresAt = nil })), wantErr: jwt.ErrTokenRequiredClaimMissing},
		{name: "past exp", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour)) })), wantErr: jwt.ErrTokenExpired},
		{name: "exp within leeway", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-5 * time.Second)) })), wantRole: RoleUser},
		{name: "issued in the future", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.IssuedAt = jwt.NewNumericDate(time.Now().Add(time.Hour)) })), wantErr: jwt.ErrTokenUsedBeforeIssued},
		{name: "missing sub", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Subject = "" })), wantErr: jwt.ErrTokenRequiredClaimMissing},
		{name: "unknown role", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Role = "root" })), wantErr: jwt.ErrTokenInvalidClaims},
		{name: "issuer and audience not configured, present in token", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Issuer = "x"; c.Audience = jwt.ClaimStrings{"y"} })), wantRole: RoleUser},
		{name: "configured issuer and audience match", a: strict, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Issuer = "phaseflow"; c.Audience = jwt.ClaimStrings{"other", "chat"} })), wantRole: RoleUser},
		{name: "wrong issuer", a: strict, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Issuer = "evil"; c.Audience = jwt.ClaimStrings{"chat"} })), wantErr: jwt.ErrTokenInvalidIssuer},
		{name: "missing issuer", a: strict, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Audience = jwt.ClaimStrings{"chat"} })), wantErr: jwt.ErrTokenRequiredClaimMissing},
		{name: "wrong audience", a: strict, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Issuer = "phaseflow"; c.Audience = jwt.ClaimStrings{"billing"} })), wantErr: jwt.ErrTokenInvalidAudience},
		{name: "stream token as bearer", a: plain, token: streamTok, wantErr: ErrUnauthorized},
		{name: "garbage", a: plain, token: "not.a.jwt", wantErr: jwt.ErrTokenMalformed},
		{name: "empty", a: plain, token: "", wantErr: ErrUnauthorized},
		{name: "lifetime over the maximum", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(c.IssuedAt.Add(DefaultMaxTTL + time.Minute)) })), wantErr: ErrLifetimeTooLong},
		{name: "lifetime at the maximum", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(c.IssuedAt.Add(DefaultMaxTTL)) })), wantRole: RoleUser},
		{name: "no iat, too much left", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) {
			c.IssuedAt = nil
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(DefaultMaxTTL + 2*Leeway))
		})), wantErr: ErrLifetimeTooLong},
		{name: "no iat, within the maximum", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.IssuedAt = nil })), wantRole: RoleUser},
		{name: "old iat makes a long lifetime", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.IssuedAt = jwt.NewNumericDate(time.Now().Add(-48 * time.Hour)) })), wantErr: ErrLifetimeTooLong},
		{name: "exp as a string", a: plain, token: rawHS256(t, `{"sub":"alice","exp":"9999999999"}`), wantErr: jwt.ErrTokenMalformed},
		{name: "iat as a string", a: plain, token: rawHS256(t, fmt.Sprintf(`{"sub":"alice","exp":%d,"iat":"1"}`, time.Now().Add(time.Hour).Unix())), wantErr: jwt.ErrTokenMalformed},
		{name: "nbf in the future", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Hour)) })), wantErr: jwt.ErrTokenNotValidYet},
		{name: "an identity provider's typ claim is fine", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Type = "Bearer" })), wantRole: RoleUser},
		{name: "x-mcp-context typ claim", a: plain, token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) { c.Type = "mcp_context" })), wantErr: ErrUnauthorized},
		{name: "x-mcp-context header typ", a: plain, token: withHeader(t, "typ", "mcp-context+jwt"), wantErr: jwt.ErrTokenUnverifiable},
		{name: "denied kid", a: NewWithOptions(Options{Secret: testSecret, HS256Bearer: true, DeniedKeyIDs: []string{"mcp-kid"}}), token: withHeader(t, "kid", "mcp-kid"), wantErr: jwt.ErrTokenUnverifiable},
		{name: "HS256 bearer turned off", a: NewWithOptions(Options{Secret: testSecret}), token: mint(t, jwt.SigningMethodHS256, testSecret, claims(nil)), wantErr: jwt.ErrTokenSignatureInvalid},
		{name: "empty secret never verifies", a: New(nil, "", ""), token: mint(t, jwt.SigningMethodHS256, []byte{}, claims(nil)), wantErr: jwt.ErrTokenUnverifiable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Twice: the second answer may come from the tokens the Authority kept, and
			// must be the first one.
			for range 2 {
				c, err := tt.a.Verify(tt.token)
				if tt.wantErr == nil {
					if err != nil {
						t.Fatalf("Verify: %v", err)
					}
					if c.Subject != "alice" || c.Role != tt.wantRole {
						t.Errorf("claims = sub %q role %q, want alice %q", c.Subject, c.Role, tt.wantRole)
					}
					c.Role = "changed by a caller" // must not reach the next caller
					continue
				}
				if !errors.Is(err, ErrUnauthorized) || !errors.Is(err, tt.wantErr) {
					t.Fatalf("Verify error = %v, want ErrUnauthorized and %v", err, tt.wantErr)
				}
				if tt.token != "" && strings.Contains(err.Error(), tt.token) {
					t.Errorf("error text contains the token")
				}
			}
		})
	}
}

func TestSignRoundTrip(t *testing.T) {
	a := New(testSecret, "phaseflow", "chat")
	tests := []struct {
		name, role, wantRole string
	}{
		{name: "default role", role: "", wantRole: RoleUser},
		{name: "user", role: RoleUser, wantRole: RoleUser},
		{name: "admin", role: RoleAdmin, wantRole: RoleAdmin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := a.Sign("bob", tt.role, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			c, err := a.Verify(tok)
			if err != nil {
				t.Fatal(err)
			}
			if c.Subject != "bob" || c.Role != tt.wantRole || c.Issuer != "phaseflow" || c.IsStream() {
				t.Errorf("claims = %+v", c)
			}
			if c.IsAdmin() != (tt.wantRole == RoleAdmin) {
				t.Errorf("IsAdmin = %v", c.IsAdmin())
			}
			if _, err := a.VerifyStream(tok, "m1"); !errors.Is(err, ErrUnauthorized) {
				t.Errorf("bearer token accepted as stream token: %v", err)
			}
		})
	}
}

func TestSignErrors(t *testing.T) {
	a := New(testSecret, "", "")
	tests := []struct {
		name string
		sign func() (string, error)
	}{
		{name: "unknown role", sign: func() (string, error) { return a.Sign("bob", "root", time.Hour) }},
		{name: "empty subject", sign: func() (string, error) { return a.Sign("", RoleUser, time.Hour) }},
		{name: "zero ttl", sign: func() (string, error) { return a.Sign("bob", RoleUser, 0) }},
		{name: "negative stream ttl", sign: func() (string, error) { return a.SignStream("bob", "m1", -time.Second) }},
		{name: "stream without message", sign: func() (string, error) { return a.SignStream("bob", "", time.Minute) }},
		{name: "empty secret", sign: func() (string, error) { return New(nil, "", "").Sign("bob", RoleUser, time.Hour) }},
		{name: "ttl over the maximum", sign: func() (string, error) { return a.Sign("bob", RoleUser, DefaultMaxTTL+time.Second) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tok, err := tt.sign(); err == nil {
				t.Errorf("signed %q, want an error", tok)
			}
		})
	}
}

func TestVerifyStream(t *testing.T) {
	a := New(testSecret, "", "")
	other := New([]byte("another secret of enough length!"), "", "")
	sign := func(a *Authority, msg string, ttl time.Duration) string {
		t.Helper()
		tok, err := a.SignStream("alice", msg, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	bearer, err := a.Sign("alice", RoleUser, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		token   string
		msg     string
		wantErr error
	}{
		{name: "valid", token: sign(a, "m1", DefaultStreamTTL), msg: "m1"},
		{name: "another message", token: sign(a, "m1", DefaultStreamTTL), msg: "m2", wantErr: ErrUnauthorized},
		{name: "empty message id", token: sign(a, "m1", DefaultStreamTTL), msg: "", wantErr: ErrUnauthorized},
		{name: "bearer token", token: bearer, msg: "m1", wantErr: ErrUnauthorized},
		{name: "other secret", token: sign(other, "m1", DefaultStreamTTL), msg: "m1", wantErr: jwt.ErrTokenSignatureInvalid},
		{name: "expired", token: mint(t, jwt.SigningMethodHS256, testSecret, claims(func(c *Claims) {
			c.Type, c.MessageID = TypeStream, "m1"
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Minute))
		})), msg: "m1", wantErr: jwt.ErrTokenExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := a.VerifyStream(tt.token, tt.msg)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("VerifyStream: %v", err)
				}
				if !c.IsStream() || c.MessageID != tt.msg || c.Subject != "alice" || c.Role != RoleUser {
					t.Errorf("claims = %+v", c)
				}
				return
			}
			if !errors.Is(err, ErrUnauthorized) || !errors.Is(err, tt.wantErr) {
				t.Errorf("VerifyStream error = %v, want ErrUnauthorized and %v", err, tt.wantErr)
			}
		})
	}
}

// An answer token answers its one question and is nothing else: not a bearer token, not a
// stream token; a bearer or stream token is not an answer token.
func TestAnswerTokens(t *testing.T) {
	a := New(testSecret, "", "")
	answer, err := a.SignAnswer("alice", "q1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.VerifyAnswer(answer)
	if err != nil || c.QuestionID != "q1" || c.Subject != "alice" || c.Type != TypeAnswer {
		t.Fatalf("VerifyAnswer = %+v, %v", c, err)
	}
	if _, err := a.Verify(answer); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("an answer token passed as a bearer token: %v", err)
	}
	if _, err := a.VerifyStream(answer, "q1"); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("an answer token passed as a stream token: %v", err)
	}
	bearer, _ := a.Sign("alice", RoleUser, time.Hour)
	stream, _ := a.SignStream("alice", "m1", time.Minute)
	for name, tok := range map[string]string{"bearer": bearer, "stream": stream, "forged": answer[:len(answer)-4] + "AAAA"} {
		if _, err := a.VerifyAnswer(tok); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("a %s token passed as an answer token: %v", name, err)
		}
	}
	if _, err := a.SignAnswer("alice", "", time.Hour); err == nil {
		t.Error("an answer token for no question was signed")
	}
}
