package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestVerifiedTokensEndAtExpiry: a kept token is valid until the moment the parser would
// refuse it (exp plus Leeway, exclusive), and not after.
func TestVerifiedTokensEndAtExpiry(t *testing.T) {
	var v verifiedTokens
	now := time.Now()
	until := now.Add(time.Minute)
	v.put("tok", &Claims{Role: RoleUser}, until, now)
	cases := []struct {
		name string
		at   time.Time
		want bool
	}{
		{"now", now, true},
		{"just before", until.Add(-time.Nanosecond), true},
		{"at until", until, false},
		{"after, once dropped", until.Add(-time.Nanosecond), false},
	}
	for _, tc := range cases {
		if _, ok := v.get("tok", tc.at); ok != tc.want {
			t.Errorf("%s: kept = %v, want %v", tc.name, ok, tc.want)
		}
	}
}

// TestVerifiedTokensStayBounded: a full cache makes room, dropping expired entries first
// and everything when none has expired.
func TestVerifiedTokensStayBounded(t *testing.T) {
	var v verifiedTokens
	now := time.Now()
	for i := range maxVerified {
		v.put(string(rune(i+1)), &Claims{}, now.Add(time.Hour), now)
	}
	v.put("one more", &Claims{}, now.Add(time.Hour), now)
	if n := len(v.m); n != 1 {
		t.Fatalf("%d entries after the cache filled, want 1 (cleared, then the new one)", n)
	}
	if _, ok := v.get("one more", now); !ok {
		t.Fatal("the token put last is not kept")
	}
}

// TestProviderTokensAreCheckedEveryTime: a token signed with an identity provider's key is
// refused as soon as the provider no longer offers the key, however often it was accepted.
func TestProviderTokensAreCheckedEveryTime(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	withdrawn := false
	a := NewWithOptions(Options{ProviderKeys: func(*jwt.Token) (any, error) {
		if withdrawn {
			return nil, errors.New("no such key")
		}
		return &key.PublicKey, nil
	}})
	tok := mint(t, jwt.SigningMethodRS256, key, claims(nil))
	for range 2 {
		if _, err := a.Verify(tok); err != nil {
			t.Fatalf("Verify with the key offered: %v", err)
		}
	}
	withdrawn = true
	if _, err := a.Verify(tok); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Verify after the key was withdrawn = %v, want ErrUnauthorized", err)
	}
}

func BenchmarkVerify(b *testing.B) {
	a := New(testSecret, "", "")
	tok, err := a.Sign("alice", RoleUser, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}
