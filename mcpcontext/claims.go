package mcpcontext

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/phaseflow/phaseflow/internal/strictjwt"
)

// Type is the "typ" claim of an x-mcp-context token.
const Type = "mcp_context"

// HeaderType is the JOSE header "typ" of an x-mcp-context token (RFC 8725 §3.11 explicit
// typing): a verifier of other tokens can refuse these without reading their claims.
const HeaderType = "mcp-context+jwt"

// DefaultTTL keeps x-mcp-context tokens short-lived: they travel to third-party MCP servers
// through the upstream and only need to outlive one turn's tool calls.
const DefaultTTL = 5 * time.Minute

// leeway tolerates small clock differences between Phaseflow and an MCP server.
const leeway = 30 * time.Second

// Context is what an x-mcp-context token says: on whose behalf, in which session, phase and
// strategy a tool call runs.
type Context struct {
	UserID, SessionID, Phase, StrategyID string
}

// Claims is the payload of an x-mcp-context token. The audience is the MCP server's label,
// so a token given to one server is useless at another. RegisteredClaims is embedded by
// value, as golang-jwt/v5 requires.
type Claims struct {
	jwt.RegisteredClaims
	Type       string `json:"typ"`
	SessionID  string `json:"sid"`
	Phase      string `json:"phase"`
	StrategyID string `json:"strategy_id,omitempty"`
}

// UnmarshalJSON refuses time claims that are not JSON numbers (see package strictjwt)
// before decoding the claims.
func (c *Claims) UnmarshalJSON(b []byte) error {
	if err := strictjwt.CheckNumericDates(b); err != nil {
		return err
	}
	type plain Claims
	return json.Unmarshal(b, (*plain)(c))
}

// Validate is called by the jwt parser after the standard checks: the token must say it is
// an x-mcp-context token and name a user.
func (c *Claims) Validate() error {
	if c.Type != Type {
		return fmt.Errorf("%w: typ %q is not %q", jwt.ErrTokenInvalidClaims, c.Type, Type)
	}
	if c.Subject == "" {
		return fmt.Errorf("%w: sub", jwt.ErrTokenRequiredClaimMissing)
	}
	return nil
}
