package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TypeMCPContext is the "typ" claim of an x-mcp-context token; such a token is never
// accepted as a bearer token by this server.
const TypeMCPContext = "mcp_context"

// DefaultMCPContextTTL keeps x-mcp-context tokens short-lived: they travel to third-party
// MCP servers through the upstream and only need to outlive one turn's tool calls.
const DefaultMCPContextTTL = 5 * time.Minute

// MCPContextClaims tell an MCP server on whose behalf a tool call runs: the user (sub),
// the session, its phase and the strategy in play. The audience is the server's label, so
// a token given to one server is useless at another.
type MCPContextClaims struct {
	jwt.RegisteredClaims
	Type       string `json:"typ"`
	SessionID  string `json:"sid"`
	Phase      string `json:"phase"`
	StrategyID string `json:"strategy_id,omitempty"`
}

// MCPContext is what an x-mcp-context token says.
type MCPContext struct {
	UserID, SessionID, Phase, StrategyID string
}

// SignMCPContext returns the x-mcp-context token for the MCP server labelled audience.
func (a *Authority) SignMCPContext(mc MCPContext, audience string, ttl time.Duration) (string, error) {
	if len(a.key) == 0 {
		return "", errors.New("auth: sign mcp context: empty secret")
	}
	if mc.UserID == "" || audience == "" {
		return "", errors.New("auth: sign mcp context: user and audience are required")
	}
	now := time.Now()
	c := MCPContextClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: mc.UserID, Issuer: a.issuer, Audience: jwt.ClaimStrings{audience},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Type: TypeMCPContext, SessionID: mc.SessionID, Phase: mc.Phase, StrategyID: mc.StrategyID,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(a.key)
	if err != nil {
		return "", fmt.Errorf("auth: sign mcp context: %w", err)
	}
	return s, nil
}

// VerifyMCPContext checks an x-mcp-context token for the server labelled audience, as an
// MCP server sharing the secret would (and as the tests do).
func (a *Authority) VerifyMCPContext(token, audience string) (*MCPContextClaims, error) {
	p := jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithAudience(audience), jwt.WithLeeway(leeway))
	var c MCPContextClaims
	if _, err := p.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return a.key, nil }); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	if c.Type != TypeMCPContext {
		return nil, fmt.Errorf("%w: not an x-mcp-context token", ErrUnauthorized)
	}
	return &c, nil
}
