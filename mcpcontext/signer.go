package mcpcontext

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/phaseflow/phaseflow/config"
)

// Signer signs x-mcp-context tokens with one key and publishes the JWKS an MCP server
// verifies them with. It is safe for concurrent use.
type Signer struct {
	key       *Key
	issuer    string
	published []PublicKey // the signing key first, then the extra published keys
	jwks      []byte
}

// NewSigner returns a signer with key. issuer, when not empty, becomes every token's iss.
// also are published in the JWKS besides key but never sign (see the package doc on
// rotation); a key listed twice is published once.
func NewSigner(key *Key, issuer string, also ...PublicKey) (*Signer, error) {
	if key == nil {
		return nil, errors.New("mcpcontext: no signing key")
	}
	s := &Signer{key: key, issuer: issuer, published: []PublicKey{key.Public()}}
	for _, k := range also {
		if !slices.ContainsFunc(s.published, func(p PublicKey) bool { return p.KID == k.KID }) {
			s.published = append(s.published, k)
		}
	}
	jwks, err := JWKSDocument(s.published)
	if err != nil {
		return nil, err
	}
	s.jwks = jwks
	return s, nil
}

// FromConfig builds the server's signer: the key in cfg.MCPKeyFile, or the one generated in
// the data dir, publishing cfg.MCPPublishedKeys too, with cfg.JWTIssuer as issuer.
func FromConfig(cfg config.Config) (*Signer, error) {
	var key *Key
	var err error
	if cfg.MCPKeyFile != "" {
		key, err = ReadKeyFile(cfg.MCPKeyFile)
	} else {
		key, err = LoadOrCreateKey(cfg.DataDir)
	}
	if err != nil {
		return nil, err
	}
	also := make([]PublicKey, 0, len(cfg.MCPPublishedKeys))
	for _, path := range cfg.MCPPublishedKeys {
		k, err := ReadPublicKeyFile(path)
		if err != nil {
			return nil, err
		}
		also = append(also, k)
	}
	return NewSigner(key, cfg.JWTIssuer, also...)
}

// JWKSDocument renders the public keys as a JWK Set (RFC 7517 §5), each with kid, alg and
// use "sig": the document a Signer serves, and the one tests publish for an identity
// provider (internal/jwkstest), so that both are written the same way.
func JWKSDocument(keys []PublicKey) ([]byte, error) {
	set := jwkset.NewMemoryStorage()
	ctx := context.Background()
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.Key, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
			ALG: jwkset.ALG(k.Alg), KID: k.KID, USE: jwkset.UseSig,
		}})
		if err != nil {
			return nil, fmt.Errorf("mcpcontext: JWKS: %w", err)
		}
		if err := set.KeyWrite(ctx, jwk); err != nil {
			return nil, fmt.Errorf("mcpcontext: JWKS: %w", err)
		}
	}
	b, err := set.JSONPublic(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcpcontext: JWKS: %w", err)
	}
	return b, nil
}

// JWKS returns the JWK Set document served at GET /.well-known/jwks.json.
func (s *Signer) JWKS() []byte { return slices.Clone(s.jwks) }

// KeyIDs returns the kid of every published key, the signing key first. The user-token
// verifier refuses tokens naming one of them.
func (s *Signer) KeyIDs() []string {
	ids := make([]string, len(s.published))
	for i, k := range s.published {
		ids[i] = k.KID
	}
	return ids
}

// SignMCPContext returns the x-mcp-context token for the MCP server labelled audience,
// valid for ttl (callers normally pass [DefaultTTL]).
func (s *Signer) SignMCPContext(mc Context, audience string, ttl time.Duration) (string, error) {
	if mc.UserID == "" || audience == "" {
		return "", errors.New("mcpcontext: sign: user and audience are required")
	}
	if ttl <= 0 {
		return "", fmt.Errorf("mcpcontext: sign: ttl must be positive, got %v", ttl)
	}
	now := time.Now()
	c := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: mc.UserID, Issuer: s.issuer, Audience: jwt.ClaimStrings{audience},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Type: Type, SessionID: mc.SessionID, Phase: mc.Phase, StrategyID: mc.StrategyID,
	}
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(s.key.public.Alg), c)
	tok.Header["kid"] = s.key.public.KID
	tok.Header["typ"] = HeaderType
	signed, err := tok.SignedString(s.key.signer)
	if err != nil {
		return "", fmt.Errorf("mcpcontext: sign: %w", err)
	}
	return signed, nil
}
