package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/api"
	"github.com/phaseflow/phaseflow/api/auth"
)

const edgeOrigin = "http://app.example:5173"

// newEdgeServer is the API without store or orchestrator: every case below is answered
// before a handler would touch them.
func newEdgeServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	a := auth.New([]byte("edge-test-secret-0123456789abcdef"), "", "")
	s := api.New(api.Deps{
		Config: api.Config{MaxBodyBytes: 1 << 20, CORSOrigins: []string{edgeOrigin}, MaxHeaderBytes: 8192, BodyTimeout: 300 * time.Millisecond},
		Auth:   a, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	tok, err := a.Sign("u1", auth.RoleUser, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return srv, tok
}

type edgeCase struct {
	name       string
	method     string
	path       string
	body       string
	headers    map[string]string
	auth       bool
	wantStatus int
	wantCode   string            // error code, when the answer is an error
	wantHeader map[string]string // headers that must equal these values
	noHeader   []string          // headers that must be absent
}

func TestEdge(t *testing.T) {
	srv, tok := newEdgeServer(t)
	jsonCT := map[string]string{"Content-Type": "application/json"}
	cases := []edgeCase{
		{name: "PUT on a list route is 405 with Allow", method: "PUT", path: "/api/v1/sessions", auth: true, wantStatus: 405, wantCode: "method_not_allowed",
			wantHeader: map[string]string{"Allow": "GET, POST, OPTIONS"}},
		{name: "DELETE on a session is 405", method: "DELETE", path: "/api/v1/sessions/abc", wantStatus: 405, wantCode: "method_not_allowed",
			wantHeader: map[string]string{"Allow": "GET, OPTIONS"}},
		{name: "PATCH on healthz is 405", method: "PATCH", path: "/healthz", wantStatus: 405, wantCode: "method_not_allowed"},
		{name: "unknown path stays 404", method: "GET", path: "/nothing/here", wantStatus: 404, wantCode: "not_found"},
		{name: "plain OPTIONS lists the methods", method: "OPTIONS", path: "/api/v1/sessions", wantStatus: 204,
			wantHeader: map[string]string{"Allow": "GET, POST, OPTIONS"}},
		{name: "preflight from a listed origin needs no token", method: "OPTIONS", path: "/api/v1/sessions",
			headers:    map[string]string{"Origin": edgeOrigin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"},
			wantStatus: 204, wantHeader: map[string]string{"Access-Control-Allow-Origin": edgeOrigin}},
		{name: "preflight from another origin gets no CORS answer", method: "OPTIONS", path: "/api/v1/sessions",
			headers:    map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
			wantStatus: 204, noHeader: []string{"Access-Control-Allow-Origin"}},
		{name: "a listed origin reads errors too", method: "GET", path: "/api/v1/sessions", headers: map[string]string{"Origin": edgeOrigin},
			wantStatus: 401, wantCode: "unauthorized", wantHeader: map[string]string{"Access-Control-Allow-Origin": edgeOrigin}},
		{name: "security headers on every answer", method: "GET", path: "/healthz", wantStatus: 200,
			wantHeader: map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store", "Content-Security-Policy": api.ContentSecurityPolicy}},
		{name: "the key set is cacheable", method: "GET", path: "/.well-known/jwks.json", wantStatus: 200,
			wantHeader: map[string]string{"Cache-Control": "public, max-age=300", "Content-Type": "application/jwk-set+json", "X-Content-Type-Options": "nosniff"}},
		{name: "oversized header is 431 as JSON", method: "GET", path: "/healthz", headers: map[string]string{"X-Big": strings.Repeat("a", 9000)},
			wantStatus: 431, wantCode: "headers_too_large"},
		{name: "text/plain on a JSON route is 415", method: "POST", path: "/api/v1/sessions", body: `{"title":"t"}`, auth: true,
			headers: map[string]string{"Content-Type": "text/plain"}, wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "form body on a JSON route is 415", method: "POST", path: "/api/v1/messages", body: `text=hi`, auth: true,
			headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "NUL in title is 400", method: "POST", path: "/api/v1/sessions", body: `{"title":"a\u0000b"}`, auth: true, headers: jsonCT, wantStatus: 400, wantCode: "bad_request"},
		{name: "NUL in text is 400", method: "POST", path: "/api/v1/messages", body: `{"text":"\u0000"}`, auth: true, headers: jsonCT, wantStatus: 400, wantCode: "bad_request"},
		{name: "NUL in client_request_id is 400", method: "POST", path: "/api/v1/messages", body: `{"text":"hi","client_request_id":"x\u0000"}`, auth: true, headers: jsonCT, wantStatus: 400, wantCode: "bad_request"},
		{name: "NUL in a key is 400", method: "POST", path: "/api/v1/messages", body: `{"te\u0000xt":"hi"}`, auth: true, headers: jsonCT, wantStatus: 400, wantCode: "bad_request"},
		{name: "invalid UTF-8 is 400", method: "POST", path: "/api/v1/messages", body: "{\"text\":\"\xff\xfe\"}", auth: true, headers: jsonCT, wantStatus: 400, wantCode: "bad_request"},
		{name: "an escaped backslash-u0000 is text, not NUL", method: "POST", path: "/api/v1/validate", body: `{"reply":"\\u0000"}`, auth: true, headers: jsonCT, wantStatus: 200},
		{name: "NUL in a path parameter is 400", method: "GET", path: "/api/v1/sessions/%00", auth: true, wantStatus: 400, wantCode: "bad_request"},
		{name: "unknown locale on a session is 400", method: "POST", path: "/api/v1/sessions", body: `{"locale":"fr"}`, auth: true, headers: jsonCT, wantStatus: 400, wantCode: "unsupported_locale"},
		{name: "unknown locale on a message is 400", method: "POST", path: "/api/v1/messages", body: `{"text":"hi","locale":"de-DE"}`, auth: true, headers: jsonCT, wantStatus: 400, wantCode: "unsupported_locale"},
		{name: "validate takes text/plain", method: "POST", path: "/api/v1/validate", body: "<final>x</final>", auth: true, headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, wantStatus: 200},
		{name: "validate refuses XML", method: "POST", path: "/api/v1/validate", body: "<final>x</final>", auth: true, headers: map[string]string{"Content-Type": "application/xml"}, wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "a request id with control bytes is replaced", method: "GET", path: "/healthz", headers: map[string]string{"X-Request-Id": "a\tb"}, wantStatus: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runEdgeCase(t, srv.URL, tok, tc) })
	}
}

func runEdgeCase(t *testing.T, base, tok string, tc edgeCase) {
	t.Helper()
	req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	if tc.auth {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range tc.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != tc.wantStatus {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.wantStatus, body)
	}
	if tc.wantCode != "" {
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != tc.wantCode || e.Error.Message == "" {
			t.Fatalf("body %s, want a JSON error with code %s", body, tc.wantCode)
		}
	}
	for k, v := range tc.wantHeader {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	for _, k := range tc.noHeader {
		if got := resp.Header.Get(k); got != "" {
			t.Errorf("%s = %q, want none", k, got)
		}
	}
	if id := resp.Header.Get("X-Request-Id"); id == "" || strings.ContainsAny(id, "\t ") {
		t.Errorf("X-Request-Id = %q", id)
	}
}

func TestUnknownLocaleNamesTheSupportedOnes(t *testing.T) {
	srv, tok := newEdgeServer(t)
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/sessions", strings.NewReader(`{"locale":"fr"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Message   string   `json:"message"`
			Supported []string `json:"supported"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if strings.Join(e.Error.Supported, ",") != "en,zh" || !strings.Contains(e.Error.Message, `"en", "zh"`) {
		t.Fatalf("error = %+v", e.Error)
	}
}

// TestSlowBodyIsCutOff sends a body slower than the body timeout: the answer is 408 and the
// connection is closed, where before the request stayed open for as long as the client liked.
func TestSlowBodyIsCutOff(t *testing.T) {
	srv, tok := newEdgeServer(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ti", tok)
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer within 5s: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408", resp.StatusCode)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("cut off after %v, want about the 300ms body timeout", d)
	}
}

func TestMetricsToken(t *testing.T) {
	a := auth.New([]byte("edge-test-secret-0123456789abcdef"), "", "")
	s := api.New(api.Deps{Config: api.Config{MetricsToken: "scrape-me"}, Auth: a, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		name, authz string
		want        int
	}{
		{"no token", "", 401},
		{"wrong token", "Bearer nope", 401},
		{"a user token is not the metrics token", "Bearer " + mustSign(t, a), 401},
		{"the metrics token", "Bearer scrape-me", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
			if tc.authz != "" {
				req.Header.Set("Authorization", tc.authz)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
			if tc.want == 200 && (!strings.Contains(string(b), `phaseflow_http_requests_total{code="unauthorized",method="GET",route="/metrics",status="401"}`) || !strings.Contains(string(b), "go_goroutines")) {
				t.Fatalf("metrics lack the refused scrapes or the runtime:\n%s", b)
			}
		})
	}
}

func mustSign(t *testing.T, a *auth.Authority) string {
	t.Helper()
	tok, err := a.Sign("u1", auth.RoleAdmin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
