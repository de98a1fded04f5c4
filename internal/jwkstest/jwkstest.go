// Package jwkstest publishes a JWK Set on loopback: the identity provider that token
// verification is tested against, both by api/auth's own tests and by the end-to-end
// attack table. One server for both, so that what "a provider's key set" means in a test
// is written once.
package jwkstest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/MicahParks/jwkset"
)

// Key is one public key of the set, with the id and algorithm it is published under.
// Sig marks it for signatures ("use": "sig"), as a provider's keys usually are; a set
// without "use" must be accepted too, so it is left to the test.
type Key struct {
	Public   any
	KID, Alg string
	Sig      bool
}

// Serve publishes keys as a JWK Set at the root of a new loopback server and returns its
// URL; the server closes when the test ends.
func Serve(t testing.TB, keys ...Key) string {
	t.Helper()
	set := jwkset.NewMemoryStorage()
	for _, k := range keys {
		meta := jwkset.JWKMetadataOptions{KID: k.KID, ALG: jwkset.ALG(k.Alg)}
		if k.Sig {
			meta.USE = jwkset.UseSig
		}
		jwk, err := jwkset.NewJWKFromKey(k.Public, jwkset.JWKOptions{Metadata: meta})
		if err != nil {
			t.Fatal(err)
		}
		if err := set.KeyWrite(context.Background(), jwk); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := set.JSONPublic(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
