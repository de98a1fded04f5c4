// Package auth issues and checks Phaseflow's user tokens and guards echo routes with them.
//
// Algorithms are pinned per kind of token. Bearer tokens are HS256 with the server's secret
// (development, scripts, "phaseflow token") and, when an identity provider's JWK Set is
// configured ([ProviderKeys]), RS256 or ES256 signed by one of its keys. "none", any other
// algorithm, an HMAC token keyed with a provider's public key (HS/RS confusion) and the
// x-mcp-context keys (package mcpcontext) are refused before any signature is checked.
//
// Claims rules: "exp" is required and must be a JSON number (a quoted "9999999999" is a
// malformed token); "iat" and "nbf", when present, must be numbers and not in the future;
// the lifetime is at most [Options.MaxTTL]: exp − iat when the token has an iat, otherwise
// exp − now (so a token without iat is judged by what is left of it). Every time check
// allows [Leeway] of clock skew between issuer and server. "iss" and "aud" are checked when
// configured; "sub" is required; "role" is "user" (the default) or "admin".
//
// There are three kinds of token. A bearer token ([Authority.Sign]) stands for a user on
// every /api/v1 route. A stream token ([Authority.SignStream]) is short-lived, always HS256
// with the server's secret, carries typ "stream" and one message id, and is accepted only as
// ?stream_token= on that message's events route, because a browser's EventSource cannot
// send an Authorization header. An x-mcp-context token (package mcpcontext) is for MCP
// servers only. None is accepted in another's place: [Authority.Verify] refuses stream and
// x-mcp-context tokens, [Authority.VerifyStream] refuses everything but stream tokens.
//
// Every failure wraps [ErrUnauthorized] (or [ErrForbidden] for a missing role) so the API's
// one error handler maps them to 401 and 403. The middleware returns these errors and never
// writes a response itself. Error texts never contain the token.
//
// Tokens must never reach a log. This package logs nothing but JWKS refresh failures; the
// request logger must not log the Authorization header, nor the query string of the events
// route (GET /api/v1/messages/:id/events), which may carry ?stream_token=. Log the route
// pattern or the path without the query instead.
package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/phaseflow/phaseflow/internal/strictjwt"
	"github.com/phaseflow/phaseflow/mcpcontext"
)

// Sentinel errors the API's error handler maps to statuses with errors.Is.
var (
	// ErrUnauthorized means no valid token was presented (HTTP 401). The jwt cause is wrapped
	// alongside it, so errors.Is(err, jwt.ErrTokenExpired) also works.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden means the token is valid but its role may not do this (HTTP 403).
	ErrForbidden = errors.New("forbidden")
	// ErrLifetimeTooLong means a token lives longer than [Options.MaxTTL]; it is returned
	// wrapped in ErrUnauthorized by the verifiers, and by itself by [Authority.Sign].
	ErrLifetimeTooLong = errors.New("token lifetime is longer than the allowed maximum")
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

// TypeAnswer is the "typ" claim of an answer token: the link a notification carries to
// answer one question of a watched agent (see SignAnswer).
const TypeAnswer = "answer"

// DefaultStreamTTL is the lifetime of the stream token the message-creating call returns:
// long enough to open and reopen the events stream, short enough that a leaked URL soon
// becomes useless.
const DefaultStreamTTL = 10 * time.Minute

// DefaultMaxTTL is the longest user-token lifetime accepted when [Options.MaxTTL] is zero.
const DefaultMaxTTL = 24 * time.Hour

// Leeway is the clock skew tolerated between a token's issuer and this server, on exp, nbf,
// iat and the lifetime of tokens without iat.
const Leeway = 30 * time.Second

// Claims is the payload of a Phaseflow token. RegisteredClaims is embedded by value, as
// golang-jwt/v5 requires (a pointer embed can panic while parsing).
type Claims struct {
	jwt.RegisteredClaims
	// Role is RoleUser or RoleAdmin; verified claims never hold "" (it means RoleUser).
	Role string `json:"role,omitempty"`
	// MessageID is the only message a stream token is valid for.
	MessageID string `json:"msg,omitempty"`
	// QuestionID is the only question an answer token answers.
	QuestionID string `json:"q,omitempty"`
	// Type is TypeStream for stream tokens and empty (or an identity provider's own value,
	// such as "Bearer") for bearer tokens.
	Type string `json:"typ,omitempty"`
}

// UnmarshalJSON refuses time claims that are not JSON numbers (see package strictjwt)
// before decoding the claims; the parser then reports the token as malformed.
func (c *Claims) UnmarshalJSON(b []byte) error {
	if err := strictjwt.CheckNumericDates(b); err != nil {
		return err
	}
	type plain Claims
	return json.Unmarshal(b, (*plain)(c))
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

// Options configure an [Authority].
type Options struct {
	// Secret is the HS256 key: it signs stream tokens and Phaseflow's own bearer tokens, and
	// verifies HS256 bearer tokens when HS256Bearer is set. Empty makes every signing and
	// every HS256 check fail rather than use an empty key.
	Secret []byte
	// Issuer and Audience, when not empty, are put into signed tokens and required of
	// verified ones.
	Issuer, Audience string
	// MaxTTL is the longest accepted lifetime; zero means [DefaultMaxTTL].
	MaxTTL time.Duration
	// HS256Bearer accepts HS256 bearer tokens signed with Secret.
	HS256Bearer bool
	// ProviderKeys, when set, accepts RS256 and ES256 bearer tokens with these keys (an
	// identity provider's JWK Set, see [ProviderKeys]).
	ProviderKeys jwt.Keyfunc
	// DeniedKeyIDs are key ids never accepted for a user token (the x-mcp-context keys),
	// whatever JWK Set claims them.
	DeniedKeyIDs []string
}

// Authority signs and verifies tokens. It is safe for concurrent use; build one at startup
// and share it.
type Authority struct {
	opts   Options
	bearer *jwt.Parser // HS256 and/or RS256, ES256
	stream *jwt.Parser // HS256 only
	// bearerSeen and streamSeen keep the HS256 tokens each parser accepted (see
	// verifiedTokens); one per parser, as the parsers allow different methods.
	bearerSeen, streamSeen verifiedTokens
}

// New returns an Authority that signs with secret and accepts HS256 bearer tokens signed
// with it; see [NewWithOptions] for identity-provider keys and limits. A non-empty issuer or
// audience is both put into signed tokens and required of verified ones.
func New(secret []byte, issuer, audience string) *Authority {
	return NewWithOptions(Options{Secret: secret, Issuer: issuer, Audience: audience, HS256Bearer: true})
}

// NewWithOptions returns an Authority configured by o.
func NewWithOptions(o Options) *Authority {
	o.Secret = slices.Clone(o.Secret)
	if o.MaxTTL <= 0 {
		o.MaxTTL = DefaultMaxTTL
	}
	var methods []string
	if o.HS256Bearer {
		methods = append(methods, jwt.SigningMethodHS256.Alg())
	}
	if o.ProviderKeys != nil {
		methods = append(methods, jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg())
	}
	return &Authority{opts: o, bearer: newParser(o, methods), stream: newParser(o, []string{jwt.SigningMethodHS256.Alg()})}
}

// newParser pins methods and the standard claim checks. With no method at all, every token
// is refused (WithValidMethods with an empty list would allow any).
func newParser(o Options, methods []string) *jwt.Parser {
	if len(methods) == 0 {
		methods = []string{"no-method-allowed"}
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(Leeway),
		jwt.WithIssuedAt(),
	}
	if o.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(o.Issuer))
	}
	if o.Audience != "" {
		opts = append(opts, jwt.WithAudience(o.Audience))
	}
	return jwt.NewParser(opts...)
}

// MaxTTL is the longest lifetime a token may have here; [Authority.Sign] refuses longer.
func (a *Authority) MaxTTL() time.Duration { return a.opts.MaxTTL }

// Sign returns a bearer token for user sub with role ("" means RoleUser) valid for ttl, at
// most [Authority.MaxTTL].
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
// nothing else, for ttl (callers normally pass [DefaultStreamTTL]; it is cut to MaxTTL).
func (a *Authority) SignStream(sub, messageID string, ttl time.Duration) (string, error) {
	if messageID == "" {
		return "", errors.New("auth: sign stream token: empty message id")
	}
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: sub}, MessageID: messageID, Type: TypeStream}
	return a.sign(c, min(ttl, a.opts.MaxTTL))
}

// SignAnswer returns an answer token: sub's answer to questionID, and nothing else, for
// ttl (at most the longest user-token lifetime). It travels in a notification's links, so
// it grants no other access; that it answers once is the question's state's to enforce.
func (a *Authority) SignAnswer(sub, questionID string, ttl time.Duration) (string, error) {
	if questionID == "" {
		return "", errors.New("auth: sign answer token: empty question id")
	}
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: sub}, QuestionID: questionID, Type: TypeAnswer}
	return a.sign(c, min(ttl, a.opts.MaxTTL))
}

// VerifyAnswer checks an answer token and returns its claims; any other token is refused.
func (a *Authority) VerifyAnswer(token string) (*Claims, error) {
	c, err := a.parse(a.stream, &a.streamSeen, token)
	if err != nil {
		return nil, err
	}
	if c.Type != TypeAnswer || c.QuestionID == "" {
		return nil, fmt.Errorf("%w: not an answer token", ErrUnauthorized)
	}
	return c, nil
}

// IsExpired reports whether a token was refused for having expired.
func IsExpired(err error) bool { return errors.Is(err, jwt.ErrTokenExpired) }

// sign fills in the time, issuer and audience claims and signs c.
func (a *Authority) sign(c Claims, ttl time.Duration) (string, error) {
	if len(a.opts.Secret) == 0 {
		return "", errors.New("auth: sign: empty secret")
	}
	if c.Subject == "" {
		return "", errors.New("auth: sign: empty subject")
	}
	if ttl <= 0 {
		return "", fmt.Errorf("auth: sign: ttl must be positive, got %v", ttl)
	}
	if ttl > a.opts.MaxTTL {
		return "", fmt.Errorf("auth: sign: ttl %v: %w (%v)", ttl, ErrLifetimeTooLong, a.opts.MaxTTL)
	}
	now := time.Now()
	c.IssuedAt = jwt.NewNumericDate(now)
	c.ExpiresAt = jwt.NewNumericDate(now.Add(ttl))
	c.Issuer = a.opts.Issuer
	if a.opts.Audience != "" {
		c.Audience = jwt.ClaimStrings{a.opts.Audience}
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(a.opts.Secret)
	if err != nil {
		return "", fmt.Errorf("auth: sign: %w", err)
	}
	return s, nil
}

// Verify checks a bearer token and returns its claims. Stream tokens are refused: they are
// meant for one message's events only and travel in URLs, where they are more easily
// leaked. x-mcp-context tokens are refused: they belong to MCP servers.
func (a *Authority) Verify(token string) (*Claims, error) {
	c, err := a.parse(a.bearer, &a.bearerSeen, token)
	if err != nil {
		return nil, err
	}
	if c.Type == TypeStream || c.Type == TypeAnswer || c.Type == mcpcontext.Type {
		return nil, fmt.Errorf("%w: a %q token is not a bearer token", ErrUnauthorized, c.Type)
	}
	return c, nil
}

// VerifyStream checks a stream token for the events of messageID and returns its claims. A
// bearer token, or a stream token for another message, is refused.
func (a *Authority) VerifyStream(token, messageID string) (*Claims, error) {
	c, err := a.parse(a.stream, &a.streamSeen, token)
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

// parse verifies signature, algorithm, standard claims and lifetime, and defaults the role.
// An HS256 token that p accepted before and that has not expired since is answered from
// seen without being parsed again.
func (a *Authority) parse(p *jwt.Parser, seen *verifiedTokens, token string) (*Claims, error) {
	if token == "" {
		return nil, fmt.Errorf("%w: empty token", ErrUnauthorized)
	}
	now := time.Now()
	if c, ok := seen.get(token, now); ok {
		return c, nil
	}
	var c Claims
	t, err := p.ParseWithClaims(token, &c, a.keyFunc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	if err := a.checkLifetime(&c); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	if c.Role == "" {
		c.Role = RoleUser
	}
	if _, hmac := t.Method.(*jwt.SigningMethodHMAC); hmac {
		seen.put(token, &c, c.ExpiresAt.Add(Leeway), now) // the parser required exp
	}
	return &c, nil
}

// checkLifetime refuses tokens that live longer than MaxTTL: exp − iat when iat is present
// (both set by the issuer, so no skew applies), else what is left, exp − now, with Leeway
// for the issuer's clock running ahead.
func (a *Authority) checkLifetime(c *Claims) error {
	exp := c.ExpiresAt.Time // the parser required exp
	if c.IssuedAt != nil {
		if life := exp.Sub(c.IssuedAt.Time); life > a.opts.MaxTTL {
			return fmt.Errorf("%w: exp - iat = %v, max %v", ErrLifetimeTooLong, life.Round(time.Second), a.opts.MaxTTL)
		}
		return nil
	}
	if left := time.Until(exp); left > a.opts.MaxTTL+Leeway {
		return fmt.Errorf("%w: no iat and exp - now = %v, max %v", ErrLifetimeTooLong, left.Round(time.Second), a.opts.MaxTTL)
	}
	return nil
}

// keyFunc hands the parser the key for the token's algorithm. The parser has already refused
// algorithms it does not allow; the checks here keep each key to its own kind of token
// should that option ever be lost: HMAC gets only the secret, RSA and ECDSA only the
// provider's keys, and no x-mcp-context token or key gets anything.
func (a *Authority) keyFunc(t *jwt.Token) (any, error) {
	if typ, _ := t.Header["typ"].(string); typ == mcpcontext.HeaderType {
		return nil, errors.New("an x-mcp-context token is not a user token")
	}
	if kid, _ := t.Header["kid"].(string); kid != "" && slices.Contains(a.opts.DeniedKeyIDs, kid) {
		return nil, fmt.Errorf("key %q is not a user-token key", kid)
	}
	switch t.Method.(type) {
	case *jwt.SigningMethodHMAC:
		if len(a.opts.Secret) == 0 {
			return nil, errors.New("empty secret")
		}
		return a.opts.Secret, nil
	case *jwt.SigningMethodRSA, *jwt.SigningMethodECDSA:
		if a.opts.ProviderKeys == nil {
			return nil, errors.New("no identity provider keys configured")
		}
		return a.opts.ProviderKeys(t)
	}
	return nil, fmt.Errorf("unexpected signing method %s", t.Method.Alg())
}
