package api

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// ContentSecurityPolicy is sent with every answer. The API answers JSON, YAML and event
// streams, which a browser never runs; the one HTML page (the playground at GET /) loads
// only its own script, style and images and talks only to this origin. So nothing but the
// same origin is allowed anywhere, no page may frame ours, and no inline code runs.
const ContentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// securityHeaders puts the headers every answer carries in place before the handler runs.
// Cache-Control: no-store keeps tokens and users' data out of shared caches; a handler may
// replace it (the event stream sends no-cache, no-transform; the JWK Set is cacheable).
func securityHeaders() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-store")
			h.Set("Content-Security-Policy", ContentSecurityPolicy)
			h.Set("X-Frame-Options", "DENY")
			h.Set("Referrer-Policy", "no-referrer")
			return next(c)
		}
	}
}

// corsMiddleware answers browsers from origins: preflights (OPTIONS with an Origin) are
// answered here, before routing and so before any auth, and other requests get
// Access-Control-Allow-Origin. No credentials mode: tokens travel in the Authorization
// header or, for EventSource, in ?stream_token=, never in cookies. With no origins there is
// no CORS at all (echo's middleware would default to "*").
func corsMiddleware(origins []string) echo.MiddlewareFunc {
	if len(origins) == 0 {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	return middleware.CORSWithConfig(middleware.CORSConfig{
		// Without an Origin it is no browser's cross-origin request: methodCheck answers a
		// plain OPTIONS with Allow.
		Skipper:      func(c echo.Context) bool { return c.Request().Header.Get(echo.HeaderOrigin) == "" },
		AllowOrigins: slices.Clone(origins),
		AllowMethods: []string{http.MethodGet, http.MethodPost, http.MethodOptions},
		AllowHeaders: []string{echo.HeaderAuthorization, echo.HeaderContentType, echo.HeaderAccept,
			"Accept-Language", "Last-Event-ID", headerRequestID},
		ExposeHeaders: []string{headerRequestID, echo.HeaderRetryAfter, echo.HeaderAllow, echo.HeaderWWWAuthenticate},
		MaxAge:        600,
	})
}

// headerLimit answers 431 as JSON when the request line and headers are larger than limit.
// net/http answers 431 itself, in plain text and before any handler, only beyond the
// server's MaxHeaderBytes, which the command sets well above limit so this check sees
// every request of a size in between.
func headerLimit(limit int) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if headerSize(c.Request()) > limit {
				return headersTooLarge(limit)
			}
			return next(c)
		}
	}
}

// headerSize counts the request line and header fields as they came on the wire (name,
// ": ", value, CRLF).
func headerSize(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + 2 + len(v) + 2
		}
	}
	return n + len(r.Host) + len("Host: \r\n")
}

// methodTable knows which methods each route pattern answers, to tell "no such path" (404)
// from "not with this method" (405 with Allow).
type methodTable []routeMethods

type routeMethods struct {
	segments []string // ":id" matches any one segment
	methods  []string
}

// newMethodTable collects the routes of e. Echo's own catch-all entries are not routes.
func newMethodTable(e *echo.Echo) methodTable {
	byPath := map[string][]string{}
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound || strings.Contains(r.Path, "*") {
			continue
		}
		byPath[r.Path] = append(byPath[r.Path], r.Method)
	}
	var t methodTable
	for p, ms := range byPath {
		slices.Sort(ms)
		t = append(t, routeMethods{segments: strings.Split(p, "/"), methods: slices.Compact(ms)})
	}
	return t
}

// allowed returns the methods path answers, or nil when no route has that path.
func (t methodTable) allowed(path string) []string {
	segs := strings.Split(path, "/")
	var out []string
	for _, r := range t {
		if matchSegments(r.segments, segs) {
			out = append(out, r.methods...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func matchSegments(pattern, segs []string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	for i, p := range pattern {
		if strings.HasPrefix(p, ":") {
			if segs[i] == "" {
				return false
			}
		} else if p != segs[i] {
			return false
		}
	}
	return true
}

// methodCheck answers 405 with Allow for a known path asked with another method, and a
// plain OPTIONS (not a CORS preflight, which corsMiddleware answered) with 204 and Allow.
func methodCheck(t *methodTable) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			allowed := t.allowed(r.URL.Path)
			if len(allowed) == 0 || slices.Contains(allowed, r.Method) {
				return next(c)
			}
			allow := strings.Join(append(slices.Clone(allowed), http.MethodOptions), ", ")
			c.Response().Header().Set(echo.HeaderAllow, allow)
			if r.Method == http.MethodOptions {
				return c.NoContent(http.StatusNoContent)
			}
			return methodNotAllowed(r.Method, allow)
		}
	}
}

// paramsCheck refuses path and query parameters holding NUL or invalid UTF-8, escaped or
// not (echo leaves a path parameter escaped): they would reach the database, which refuses
// them with an error that would otherwise be a 500, or read as an unknown id.
func paramsCheck() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			for _, v := range c.ParamValues() {
				if u, err := url.PathUnescape(v); err != nil || !cleanText(v) || !cleanText(u) {
					return badRequest("the path holds a NUL byte or invalid UTF-8")
				}
			}
			for name, vs := range c.QueryParams() {
				for _, v := range vs {
					if !cleanText(name) || !cleanText(v) {
						return badRequest(fmt.Sprintf("query parameter %q holds a NUL byte or invalid UTF-8", name))
					}
				}
			}
			return next(c)
		}
	}
}
