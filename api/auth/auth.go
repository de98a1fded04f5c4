// Package auth issues and checks Phaseflow's JWTs and guards echo routes with them.
//
// Tokens are HS256 only: the parser pins the algorithm, so "none", HS384/HS512 and RS256
// tokens are refused before any key is used, and a token without "exp" is refused too (a
// missing exp would otherwise never expire). "iss" and "aud" are checked when configured.
//
// There are two kinds of token. A bearer token ([Authority.Sign]) stands for a user on every
// /api/v1 route. A stream token ([Authority.SignStream]) is short-lived, carries
// typ "stream" and one message id, and is accepted only as ?stream_token= on that message's
// events route, because a browser's EventSource cannot send an Authorization header. The two
// are not interchangeable: [Authority.Verify] refuses stream tokens and
// [Authority.VerifyStream] refuses bearer tokens.
//
// Every failure wraps [ErrUnauthorized] (or [ErrForbidden] for a missing role) so the API's
// one error handler maps them to 401 and 403. The middleware returns these errors and never
// writes a response itself. Error texts never contain the token.
//
// Tokens must never reach a log. This package logs nothing; the request logger must not log
// the Authorization header, nor the query string of the events route
// (GET /api/v1/messages/:id/events), which may carry ?stream_token=. Log the route pattern
// or the path without the query instead.
package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Sentinel errors the API's error handler maps to statuses with errors.Is.
var (
	// ErrUnauthorized means no valid token was presented (HTTP 401). The jwt cause is wrapped
	// alongside it, so errors.Is(err, jwt.ErrTokenExpired) also works.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden means the token is valid but its role may not do this (HTTP 403).
	ErrForbidden = errors.New("forbidden")
)

// Roles a token can carry in its "role" claim.
const (
	// RoleUser is the default role: the user sees only their own data.
	RoleUser = "user"
	// RoleAdmin may also use the admin routes (prompt versions).
	RoleAdmin = "admin"
)

// TypeStream is the "typ" claim of a stream token.
const TypeStream = "stream"

// DefaultStreamTTL is the lifetime of the stream token the message-creating call returns:
// long enough to open and reopen the events stream, short enough that a leaked URL soon
// becomes useless.
const DefaultStreamTTL = 10 * time.Minute

// leeway tolerates small clock differences between the signer and this server.
const leeway = 30 * time.Second

// Claims is the payload of a Phaseflow token. RegisteredClaims is embedded by value, as
// golang-jwt/v5 requires (a pointer embed can panic while parsing).
type Claims struct {
	jwt.RegisteredClaims
	// Role is RoleUser or RoleAdmin; verified claims never hold "" (it means RoleUser).
	Role string `json:"role,omitempty"`
	// MessageID is the only message a stream token is valid for.
	MessageID string `json:"msg,omitempty"`
	// Type is TypeStream for stream tokens and empty for bearer tokens.
	Type string `json:"typ,omitempty"`
}

// Validate is called by the jwt parser after the standard checks: every token names a user
// and a known role.
func (c *Claims) Validate() error {
	if c.Subject == "" {
		return fmt.Errorf("%w: sub", jwt.ErrTokenRequiredClaimMissing)
	}
	if c.Role != "" && c.Role != RoleUser && c.Role != RoleAdmin {
		return fmt.Errorf("%w: unknown role %q", jwt.ErrTokenInvalidClaims, c.Role)
	}
	return nil
}

// IsAdmin reports whether the token grants the admin role.
func (c *Claims) IsAdmin() bool { return c.Role == RoleAdmin }

// IsStream reports whether this is a stream token rather than a bearer token.
func (c *Claims) IsStream() bool { return c.Type == TypeStream }

// Authority signs and verifies tokens with one HS256 secret. It is safe for concurrent use;
// build one at startup and share it.
type Authority struct {
	key      []byte
	issuer   string
	audience string
	parser   *jwt.Parser
}

// New returns an Authority for secret (at least 32 random bytes is advised; see
// [LoadOrCreateSecret]). A non-empty issuer or audience is both put into signed tokens and
// required of verified ones. An empty secret makes every Sign and Verify fail, rather than
// accept tokens signed with an empty key.
func New(secret []byte, issuer, audience string) *Authority {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(leeway),
		jwt.WithIssuedAt(),
	}
	if issuer != "" {
		opts = append(opts, jwt.WithIssuer(issuer))
	}
	if audience != "" {
		opts = append(opts, jwt.WithAudience(audience))
	}
	return &Authority{
		key:      append([]byte(nil), secret...),
		issuer:   issuer,
		audience: audience,
		parser:   jwt.NewParser(opts...),
	}
}

// Sign returns a bearer token for user sub with role ("" means RoleUser) valid for ttl.
func (a *Authority) Sign(sub, role string, ttl time.Duration) (string, error) {
	if role == "" {
		role = RoleUser
	}
	if role != RoleUser && role != RoleAdmin {
		return "", fmt.Errorf("auth: sign: unknown role %q", role)
	}
	return a.sign(Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: sub}, Role: role}, ttl)
}

// SignStream returns a stream token that lets user sub read the events of messageID, and
// nothing else, for ttl (callers normally pass [DefaultStreamTTL]).
func (a *Authority) SignStream(sub, messageID string, ttl time.Duration) (string, error) {
	if messageID == "" {
		return "", errors.New("auth: sign stream token: empty message id")
	}
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: sub}, MessageID: messageID, Type: TypeStream}
	return a.sign(c, ttl)
}

// sign fills in the time, issuer and audience claims and signs c.
func (a *Authority) sign(c Claims, ttl time.Duration) (string, error) {
	if len(a.key) == 0 {
		return "", errors.New("auth: sign: empty secret")
	}
	if c.Subject == "" {
		return "", errors.New("auth: sign: empty subject")
	}
	if ttl <= 0 {
		return "", fmt.Errorf("auth: sign: ttl must be positive, got %v", ttl)
	}
	now := time.Now()
	c.IssuedAt = jwt.NewNumericDate(now)
	c.ExpiresAt = jwt.NewNumericDate(now.Add(ttl))
	c.Issuer = a.issuer
	if a.audience != "" {
		c.Audience = jwt.ClaimStrings{a.audience}
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(a.key)
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return s, nil
}

// Verify checks a bearer token and returns its claims. Stream tokens are refused: they are
// meant for one message's events only and travel in URLs, where they are more easily leaked.
func (a *Authority) Verify(token string) (*Claims, error) {
	c, err := a.parse(token)
	if err != nil {
		return nil, err
	}
	if c.Type != "" {
		return nil, fmt.Errorf("%w: a %q token is not a bearer token", ErrUnauthorized, c.Type)
	}
	return c, nil
}

// VerifyStream checks a stream token for the events of messageID and returns its claims. A
// bearer token, or a stream token for another message, is refused.
func (a *Authority) VerifyStream(token, messageID string) (*Claims, error) {
	c, err := a.parse(token)
	if err != nil {
		return nil, err
	}
	if c.Type != TypeStream {
		return nil, fmt.Errorf("%w: not a stream token", ErrUnauthorized)
	}
	if messageID == "" || c.MessageID != messageID {
		return nil, fmt.Errorf("%w: stream token is for another message", ErrUnauthorized)
	}
	return c, nil
}

// parse verifies signature, algorithm and standard claims, and defaults the role.
func (a *Authority) parse(token string) (*Claims, error) {
	if token == "" {
		return nil, fmt.Errorf("%w: empty token", ErrUnauthorized)
	}
	var c Claims
	if _, err := a.parser.ParseWithClaims(token, &c, a.keyFunc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	if c.Role == "" {
		c.Role = RoleUser
	}
	return &c, nil
}

// keyFunc hands the parser the HS256 key. The parser has already refused any other
// algorithm; checking the method type again keeps the key safe if that option is ever lost.
func (a *Authority) keyFunc(t *jwt.Token) (any, error) {
	if _, ok := t.Method.(*jwt.SigningMethodHMAC); !ok {
		return nil, fmt.Errorf("unexpected signing method %s", t.Method.Alg())
	}
	if len(a.key) == 0 {
		return nil, errors.New("empty secret")
	}
	return a.key, nil
}
