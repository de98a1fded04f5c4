package auth

import (
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"
)

// claimsKey is the echo context key under which the middleware stores the verified claims.
const claimsKey = "phaseflow.auth.claims"

// StreamTokenParam is the query parameter that carries a stream token on the events route.
const StreamTokenParam = "stream_token"

// Middleware requires "Authorization: Bearer <jwt>" holding a valid bearer token and stores
// its claims for [FromContext]. On failure it returns an error wrapping [ErrUnauthorized]
// and leaves the response to the API's error handler, so every 401 looks the same.
func (a *Authority) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			token, err := bearerToken(c)
			if err != nil {
				return challenge(c, err)
			}
			claims, err := a.Verify(token)
			if err != nil {
				return challenge(c, err)
			}
			c.Set(claimsKey, claims)
			return next(c)
		}
	}
}

// StreamMiddleware guards the events route, whose clients may be browsers' EventSource that
// cannot send headers. It accepts a bearer token in the Authorization header, or else a
// stream token in ?stream_token= that was issued for the message named by the path parameter
// messageIDParam (e.g. "id" for /messages/:id/events). When a header is present it alone
// decides. Claims from a stream token have IsStream() true; handlers still check that the
// message belongs to claims.Subject.
func (a *Authority) StreamMiddleware(messageIDParam string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			claims, err := a.streamClaims(c, messageIDParam)
			if err != nil {
				return challenge(c, err)
			}
			c.Set(claimsKey, claims)
			return next(c)
		}
	}
}

// streamClaims verifies whichever credential the events request carries.
func (a *Authority) streamClaims(c echo.Context, messageIDParam string) (*Claims, error) {
	if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
		token, err := bearerToken(c)
		if err != nil {
			return nil, err
		}
		return a.Verify(token)
	}
	token := c.QueryParam(StreamTokenParam)
	if token == "" {
		return nil, fmt.Errorf("%w: missing bearer token or %s", ErrUnauthorized, StreamTokenParam)
	}
	return a.VerifyStream(token, c.Param(messageIDParam))
}

// RequireAdmin lets only admin tokens through. Put it after [Authority.Middleware]; without
// claims it answers 401, with a non-admin token an error wrapping [ErrForbidden].
func RequireAdmin() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			claims, ok := FromContext(c)
			if !ok {
				return fmt.Errorf("%w: no verified token", ErrUnauthorized)
			}
			if !claims.IsAdmin() {
				return fmt.Errorf("%w: admin role required", ErrForbidden)
			}
			return next(c)
		}
	}
}

// FromContext returns the claims the middleware verified for this request. ok is false on
// routes without auth middleware; handlers behind it can rely on ok being true.
func FromContext(c echo.Context) (*Claims, bool) {
	claims, ok := c.Get(claimsKey).(*Claims)
	return claims, ok && claims != nil
}

// bearerToken extracts the token from "Authorization: Bearer <token>" (scheme
// case-insensitive, as RFC 6750 allows).
func bearerToken(c echo.Context) (string, error) {
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	if h == "" {
		return "", fmt.Errorf("%w: missing bearer token", ErrUnauthorized)
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", fmt.Errorf("%w: authorization header is not a bearer token", ErrUnauthorized)
	}
	return strings.TrimSpace(token), nil
}

// challenge sets the WWW-Authenticate header RFC 6750 asks of a 401 and passes err on; the
// error handler writes the status and body.
func challenge(c echo.Context, err error) error {
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="phaseflow"`)
	return err
}
