// Package jwkstest publishes a JWK Set on loopback: the identity provider that token
// verification is tested against, both by api/auth's own tests and by the end-to-end
// attack table. The document is the one the server itself renders for its MCP keys
// (mcpcontext.JWKSDocument), so tests and server describe keys the same way.
package jwkstest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/phaseflow/phaseflow/mcpcontext"
)

// Serve publishes keys as a JWK Set at the root of a new loopback server and returns its
// URL; the server closes when the test ends.
func Serve(t testing.TB, keys ...mcpcontext.PublicKey) string {
	t.Helper()
	doc, err := mcpcontext.JWKSDocument(keys)
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
