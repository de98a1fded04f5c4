package mcpcontext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// ErrInvalid wraps every reason [Verifier.Verify] refuses a token; the jwt cause is wrapped
// alongside it, so errors.Is(err, jwt.ErrTokenExpired) also works.
var ErrInvalid = errors.New("mcpcontext: invalid x-mcp-context token")

// Verifier checks x-mcp-context tokens the way an MCP server should: with the published
// keys only, EdDSA or ES256 only, exp required, the audience its own label. It never holds a
// private key. It is safe for concurrent use.
type Verifier struct {
	keys jwt.Keyfunc
}

// NewVerifier returns a verifier over a fixed JWK Set document (what
// GET /.well-known/jwks.json answered).
func NewVerifier(jwks []byte) (*Verifier, error) {
	k, err := keyfunc.NewJWKSetJSON(json.RawMessage(jwks))
	if err != nil {
		return nil, fmt.Errorf("mcpcontext: verifier: %w", err)
	}
	return &Verifier{keys: k.Keyfunc}, nil
}

// NewRemoteVerifier returns a verifier that fetches the JWK Set at url, refreshes it hourly
// and when a token names an unknown kid (at most every 5 minutes), until ctx ends. Refresh
// failures are logged to logger and the cached keys are kept.
func NewRemoteVerifier(ctx context.Context, url string, logger *slog.Logger) (*Verifier, error) {
	k, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{url}, keyfunc.Override{
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) { logger.Warn("refresh the MCP context JWKS", "url", u, "err", err) }
		},
	})
	if err != nil {
		return nil, fmt.Errorf("mcpcontext: verifier: %w", err)
	}
	return &Verifier{keys: k.Keyfunc}, nil
}

// Verify checks token for the MCP server labelled audience and returns its claims.
func (v *Verifier) Verify(token, audience string) (*Claims, error) {
	if audience == "" {
		return nil, fmt.Errorf("%w: no audience to check", ErrInvalid)
	}
	p := jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg(), jwt.SigningMethodES256.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithAudience(audience), jwt.WithLeeway(leeway))
	var c Claims
	if _, err := p.ParseWithClaims(token, &c, v.keyFunc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &c, nil
}

// keyFunc insists on the explicit type and a kid before looking the key up, so a token that
// was not made as an x-mcp-context token never reaches a signature check.
func (v *Verifier) keyFunc(t *jwt.Token) (any, error) {
	if typ, _ := t.Header["typ"].(string); typ != HeaderType {
		return nil, fmt.Errorf("header typ %q is not %q", typ, HeaderType)
	}
	if kid, _ := t.Header["kid"].(string); kid == "" {
		return nil, errors.New("no kid")
	}
	return v.keys(t)
}
