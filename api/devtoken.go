package api

import (
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api/auth"
)

// devTokenSub is the user the development token signs in as, the same as the token
// "phaseflow serve" prints at start.
const devTokenSub = "dev"

// devToken answers GET /api/v1/dev/token, without auth, with a user token for "dev", so the
// playground's "Use the dev token" button can sign a newcomer in. It exists only in
// development: the server was given no JWT secret (it generated one) and listens on a
// loopback address, which [Config.DevTokenTTL] > 0 stands for. Even then it answers only a
// request from a loopback address, addressed to a loopback host (no DNS rebinding), and not
// sent cross-site by another page. Everything else gets the 404 an unknown route gets, so
// the route does not even show it exists.
func (s *Server) devToken(c echo.Context) error {
	r := c.Request()
	if s.cfg.DevTokenTTL <= 0 || !loopbackRemote(r) || !loopbackHost(r.Host) || crossSite(r) {
		return &HTTPError{Status: http.StatusNotFound, Code: "not_found", Message: "not found"}
	}
	tok, err := s.auth.Sign(devTokenSub, auth.RoleUser, s.cfg.DevTokenTTL)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, map[string]any{
		"token": tok, "sub": devTokenSub, "expires_at": time.Now().Add(s.cfg.DevTokenTTL).UTC().Truncate(time.Second),
	})
}

// loopbackRemote reports whether the request came from this machine.
func loopbackRemote(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header (or a listen address) names this machine:
// localhost or a loopback IP, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// crossSite reports whether another site's page sent the request: by the browser's
// Sec-Fetch-Site header when it sends one, else by an Origin other than the request's own.
func crossSite(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site != "same-origin" && site != "none"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || u.Host != r.Host
}

// DevMode reports whether a server is in development mode, where GET /api/v1/dev/token
// hands out tokens: it generated its JWT secret (none was configured) and listens on a
// loopback address, so only this machine can reach it.
func DevMode(secretConfigured bool, listenAddr string) bool {
	return !secretConfigured && loopbackHost(listenAddr)
}
