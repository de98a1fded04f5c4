package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/api"
	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/playground"
)

// get fetches path from srv with the given headers (name, value, …).
func get(t *testing.T, srv *httptest.Server, path string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1] // net/http sends req.Host, never a Host header
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// TestPlaygroundServed checks the page and its files: no token needed, the right types,
// the Content-Security-Policy the page is written for, revalidation by ETag, and 404 for
// anything that is not a file of the page.
func TestPlaygroundServed(t *testing.T) {
	srv := httptest.NewServer(newDocServer(t).Handler())
	defer srv.Close()
	cases := []struct {
		path, ctype, contains string
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/playground/app.js"></script>`},
		{"/playground/app.js", "text/javascript; charset=utf-8", "import"},
		{"/playground/style.css", "text/css; charset=utf-8", ":root"},
		{"/playground/favicon.svg", "image/svg+xml", "<svg"},
		{"/playground/vendor/marked.esm.js", "text/javascript; charset=utf-8", "marked v18.2.1"},
		{"/playground/vendor/purify.es.mjs", "text/javascript; charset=utf-8", "DOMPurify 3.4.18"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := get(t, srv, tc.path)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.ctype || !strings.Contains(body, tc.contains) {
				t.Fatalf("status %d, Content-Type %q, body has %q: %v", resp.StatusCode, resp.Header.Get("Content-Type"), tc.contains, strings.Contains(body, tc.contains))
			}
			if got := resp.Header.Get("Content-Security-Policy"); got != playground.ContentSecurityPolicy {
				t.Errorf("Content-Security-Policy = %q", got)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Cache-Control") != "no-cache" {
				t.Errorf("headers %v", resp.Header)
			}
			again, _ := get(t, srv, tc.path, "If-None-Match", resp.Header.Get("ETag"))
			if resp.Header.Get("ETag") == "" || again.StatusCode != http.StatusNotModified {
				t.Errorf("ETag %q, revalidation status %d, want 304", resp.Header.Get("ETag"), again.StatusCode)
			}
		})
	}
	for _, path := range []string{"/playground/playground.go", "/playground/..%2Fplayground.go", "/playground/vendor/..%2F..%2Fplayground.go",
		"/playground/nope.js", "/playground/vendor/app.js", "/playground/index.html/x"} {
		if resp, _ := get(t, srv, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestPageHasNoInlineCode keeps the pages working under their Content-Security-Policy: no
// inline script or style, no event-handler attribute, no style attribute.
func TestPageHasNoInlineCode(t *testing.T) {
	for _, name := range []string{playground.IndexFile, playground.ReferenceFile} {
		a, err := playground.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		page := string(a.Body)
		for _, bad := range []string{"<style", " style=", " onclick=", " onload=", " onsubmit=", "javascript:"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s holds %q, which the Content-Security-Policy blocks", name, bad)
			}
		}
		for _, script := range strings.Split(page, "<script")[1:] {
			if !strings.Contains(strings.SplitN(script, ">", 2)[0], "src=") {
				t.Errorf("%s: inline <script%s", name, strings.SplitN(script, "\n", 2)[0])
			}
		}
	}
}

// devServer is a server whose dev-token route is on (DevTokenTTL > 0) or off.
func devServer(t *testing.T, ttl time.Duration) (*httptest.Server, *auth.Authority) {
	t.Helper()
	a := auth.New([]byte("dev-token-test-secret-0123456789abcdef"), "", "")
	s := api.New(api.Deps{Config: api.Config{DevTokenTTL: ttl}, Auth: a, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, a
}

func TestDevToken(t *testing.T) {
	on, authority := devServer(t, time.Hour)
	off, _ := devServer(t, 0)
	cases := []struct {
		name    string
		srv     *httptest.Server
		headers []string
		want    int
	}{
		{"development, same origin", on, []string{"Sec-Fetch-Site", "same-origin"}, http.StatusOK},
		{"development, typed in the address bar", on, []string{"Sec-Fetch-Site", "none"}, http.StatusOK},
		{"development, a script without fetch metadata", on, nil, http.StatusOK},
		{"a configured secret or another address", off, []string{"Sec-Fetch-Site", "same-origin"}, http.StatusNotFound},
		{"another site's page", on, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusNotFound},
		{"another site's page, by Origin", on, []string{"Origin", "http://evil.example"}, http.StatusNotFound},
		{"a name that resolves to loopback (DNS rebinding)", on, []string{"Host", "evil.example"}, http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, tc.srv, "/api/v1/dev/token", tc.headers...)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.want)
			}
			if tc.want != http.StatusOK {
				return
			}
			var tok struct {
				Token, Sub string
				ExpiresAt  time.Time `json:"expires_at"`
			}
			if err := json.Unmarshal([]byte(body), &tok); err != nil {
				t.Fatal(err)
			}
			claims, err := authority.Verify(tok.Token)
			if err != nil || claims.Subject != "dev" || tok.Sub != "dev" || time.Until(tok.ExpiresAt) > time.Hour {
				t.Errorf("token %+v: claims %+v, err %v", tok, claims, err)
			}
			if resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control = %q", resp.Header.Get("Cache-Control"))
			}
		})
	}
}

func TestDevMode(t *testing.T) {
	cases := []struct {
		secret bool
		addr   string
		want   bool
	}{
		{false, "127.0.0.1:8080", true},
		{false, "localhost:8080", true},
		{false, "[::1]:8080", true},
		{false, "0.0.0.0:8080", false},
		{false, ":8080", false},
		{false, "192.168.1.5:8080", false},
		{true, "127.0.0.1:8080", false},
	}
	for _, tc := range cases {
		if got := api.DevMode(tc.secret, tc.addr); got != tc.want {
			t.Errorf("DevMode(secret %v, %q) = %v, want %v", tc.secret, tc.addr, got, tc.want)
		}
	}
}
