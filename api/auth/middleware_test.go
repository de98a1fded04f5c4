package auth

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// testErrorHandler stands in for the API's single error handler: it maps the sentinels to
// statuses and writes the contract's error body.
func testErrorHandler(err error, c echo.Context) {
	status, code := http.StatusInternalServerError, "internal_error"
	switch {
	case errors.Is(err, ErrUnauthorized):
		status, code = http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, ErrForbidden):
		status, code = http.StatusForbidden, "forbidden"
	}
	_ = c.JSON(status, map[string]any{"error": map[string]string{"code": code, "message": err.Error()}})
}

// newTestServer serves three routes behind the middleware on a loopback httptest.Server.
func newTestServer(t *testing.T, a *Authority) *httptest.Server {
	t.Helper()
	e := echo.New()
	e.HTTPErrorHandler = testErrorHandler
	whoami := func(c echo.Context) error {
		claims, ok := FromContext(c)
		if !ok {
			return errors.New("no claims")
		}
		return c.String(http.StatusOK, claims.Subject+" "+claims.Role)
	}
	api := e.Group("/api/v1")
	api.GET("/me", whoami, a.Middleware())
	api.GET("/admin", whoami, a.Middleware(), RequireAdmin())
	api.GET("/messages/:id/events", whoami, a.StreamMiddleware("id"))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

func TestMiddleware(t *testing.T) {
	a := New(testSecret, "", "")
	srv := newTestServer(t, a)
	must := func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	user := must(a.Sign("alice", RoleUser, time.Hour))
	admin := must(a.Sign("root", RoleAdmin, time.Hour))
	stream := must(a.SignStream("alice", "m1", DefaultStreamTTL))
	foreign := must(New([]byte("another secret of enough length!"), "", "").Sign("alice", RoleUser, time.Hour))

	tests := []struct {
		name       string
		path       string
		authz      string
		wantStatus int
		wantBody   string // substring
	}{
		{name: "valid bearer", path: "/api/v1/me", authz: "Bearer " + user, wantStatus: 200, wantBody: "alice user"},
		{name: "lowercase scheme", path: "/api/v1/me", authz: "bearer " + user, wantStatus: 200, wantBody: "alice user"},
		{name: "no header", path: "/api/v1/me", wantStatus: 401, wantBody: `"code":"unauthorized"`},
		{name: "basic auth", path: "/api/v1/me", authz: "Basic YWxpY2U6cHc=", wantStatus: 401},
		{name: "bearer without token", path: "/api/v1/me", authz: "Bearer ", wantStatus: 401},
		{name: "foreign signature", path: "/api/v1/me", authz: "Bearer " + foreign, wantStatus: 401},
		{name: "stream token as bearer", path: "/api/v1/me", authz: "Bearer " + stream, wantStatus: 401},
		{name: "stream token in query of a normal route", path: "/api/v1/me?stream_token=" + stream, wantStatus: 401},
		{name: "admin route as user", path: "/api/v1/admin", authz: "Bearer " + user, wantStatus: 403, wantBody: `"code":"forbidden"`},
		{name: "admin route as admin", path: "/api/v1/admin", authz: "Bearer " + admin, wantStatus: 200, wantBody: "root admin"},
		{name: "admin route without token", path: "/api/v1/admin", wantStatus: 401},
		{name: "events with bearer", path: "/api/v1/messages/m1/events", authz: "Bearer " + user, wantStatus: 200, wantBody: "alice user"},
		{name: "events with stream token", path: "/api/v1/messages/m1/events?stream_token=" + stream, wantStatus: 200, wantBody: "alice user"},
		{name: "events with stream token for another message", path: "/api/v1/messages/m2/events?stream_token=" + stream, wantStatus: 401},
		{name: "events with bearer token in query", path: "/api/v1/messages/m1/events?stream_token=" + user, wantStatus: 401},
		{name: "events with bad header and good stream token", path: "/api/v1/messages/m1/events?stream_token=" + stream, authz: "Bearer " + foreign, wantStatus: 401},
		{name: "events without credentials", path: "/api/v1/messages/m1/events", wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, header, body := get(t, srv.URL+tt.path, tt.authz)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", status, tt.wantStatus, body)
			}
			if !strings.Contains(body, tt.wantBody) {
				t.Errorf("body = %s, want it to contain %s", body, tt.wantBody)
			}
			if status == http.StatusUnauthorized {
				assertErrorBody(t, body)
				if header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			}
			for _, tok := range []string{user, admin, stream, foreign} {
				if status != http.StatusOK && strings.Contains(body, tok) {
					t.Error("error body echoes a token")
				}
			}
		})
	}
}

// get performs one GET with an optional Authorization header.
func get(t *testing.T, url, authz string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// assertErrorBody checks the contract's {"error":{"code","message"}} shape.
func assertErrorBody(t *testing.T, body string) {
	t.Helper()
	var v struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Error.Code != "unauthorized" || v.Error.Message == "" {
		t.Errorf("error body = %s (%v)", body, err)
	}
}
