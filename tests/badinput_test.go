package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/api/auth"
)

// badInput is one request a careless or hostile client sends; the answer must be want with
// a JSON error of code (when code is set) and the server must go on serving.
type badInput struct {
	name    string
	method  string
	path    string
	body    string
	headers map[string]string
	want    int
	code    string
	check   func(t *testing.T, resp *http.Response)
}

// TestBadInput sends every kind of bad input of issue 13 to the real binary, each case
// named; after each, the server must still answer /healthz.
func TestBadInput(t *testing.T) {
	a := startAttackServer(t)
	owner := a.userToken(t, "bella", auth.RoleUser)
	sid := a.newSession(owner, "en")
	jsonCT := map[string]string{"Content-Type": "application/json"}
	cases := []badInput{
		{name: "NUL in text", method: "POST", path: "/api/v1/sessions/" + sid + "/messages", body: `{"text":"hi\u0000there"}`, headers: jsonCT, want: 400, code: "bad_request"},
		{name: "NUL in title", method: "POST", path: "/api/v1/sessions", body: `{"title":"\u0000"}`, headers: jsonCT, want: 400, code: "bad_request"},
		{name: "NUL in client_request_id", method: "POST", path: "/api/v1/messages", body: `{"text":"hi","client_request_id":"c\u0000"}`, headers: jsonCT, want: 400, code: "bad_request"},
		{name: "NUL in a phase move reason", method: "POST", path: "/api/v1/sessions/" + sid + "/phase", body: `{"to":"stress_test","reason":"\u0000"}`, headers: jsonCT, want: 400, code: "bad_request"},
		{name: "invalid UTF-8 in text", method: "POST", path: "/api/v1/sessions/" + sid + "/messages", body: "{\"text\":\"\xc3\x28\"}", headers: jsonCT, want: 400, code: "bad_request"},
		{name: "invalid UTF-8 in title", method: "POST", path: "/api/v1/sessions", body: "{\"title\":\"\xff\"}", headers: jsonCT, want: 400, code: "bad_request"},
		{name: "NUL in a path id", method: "GET", path: "/api/v1/sessions/%00", want: 400, code: "bad_request"},
		{name: "escaped invalid UTF-8 in a path id", method: "GET", path: "/api/v1/messages/%ff%fe", want: 400, code: "bad_request"},
		{name: "an escaped NUL in a path id", method: "GET", path: "/api/v1/sessions/a%00b", want: 400, code: "bad_request"},
		{name: "text/plain on a JSON route", method: "POST", path: "/api/v1/sessions", body: `{"title":"t"}`, headers: map[string]string{"Content-Type": "text/plain"}, want: 415, code: "unsupported_media_type"},
		{name: "form body on the message route", method: "POST", path: "/api/v1/messages", body: "text=hi", headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, want: 415, code: "unsupported_media_type"},
		{name: "no content type on a JSON body", method: "POST", path: "/api/v1/sessions/" + sid + "/messages", body: `{"text":"hi"}`, want: 415, code: "unsupported_media_type"},
		{name: "validate takes text/plain by contract", method: "POST", path: "/api/v1/validate", body: "<final>x</final>", headers: map[string]string{"Content-Type": "text/plain"}, want: 200},
		{name: "validate refuses XML", method: "POST", path: "/api/v1/validate", body: "<final>x</final>", headers: map[string]string{"Content-Type": "application/xml"}, want: 415, code: "unsupported_media_type"},
		{name: "malformed JSON", method: "POST", path: "/api/v1/sessions", body: `{"title":`, headers: jsonCT, want: 400, code: "bad_request"},
		{name: "JSON array instead of an object", method: "POST", path: "/api/v1/sessions", body: `["t"]`, headers: jsonCT, want: 400, code: "bad_request"},
		{name: "PUT on the sessions list", method: "PUT", path: "/api/v1/sessions", want: 405, code: "method_not_allowed", check: wantHeader("Allow", "GET, POST, OPTIONS")},
		{name: "DELETE on a message", method: "DELETE", path: "/api/v1/messages/x", want: 405, code: "method_not_allowed", check: wantHeader("Allow", "GET, OPTIONS")},
		{name: "PATCH on metrics", method: "PATCH", path: "/metrics", want: 405, code: "method_not_allowed", check: wantHeader("Allow", "GET, OPTIONS")},
		{name: "GET on the cancel route", method: "GET", path: "/api/v1/messages/x/cancel", want: 405, code: "method_not_allowed", check: wantHeader("Allow", "POST, OPTIONS")},
		{name: "oversized header", method: "GET", path: "/healthz", headers: map[string]string{"X-Padding": strings.Repeat("p", 20_000)}, want: 431, code: "headers_too_large"},
		{name: "oversized cookie", method: "GET", path: "/api/v1/sessions", headers: map[string]string{"Cookie": "a=" + strings.Repeat("c", 10_000)}, want: 431, code: "headers_too_large"},
		{name: "headers beyond net/http's own limit", method: "GET", path: "/healthz", headers: map[string]string{"X-Padding": strings.Repeat("p", 1<<20+10_000)}, want: 431},
		{name: "unknown locale on a session", method: "POST", path: "/api/v1/sessions", body: `{"locale":"fr"}`, headers: jsonCT, want: 400, code: "unsupported_locale", check: wantBody(`"supported":["en","zh"]`)},
		{name: "unknown locale on a message", method: "POST", path: "/api/v1/messages", body: `{"text":"hi","locale":"xx-YY"}`, headers: jsonCT, want: 400, code: "unsupported_locale"},
		{name: "a region of a supported locale is fine", method: "POST", path: "/api/v1/sessions", body: `{"locale":"zh-CN"}`, headers: jsonCT, want: 201, check: wantBody(`"locale":"zh"`)},
		{name: "limit 0", method: "GET", path: "/api/v1/sessions?limit=0", want: 400, code: "bad_request"},
		{name: "limit over 200", method: "GET", path: "/api/v1/sessions?limit=500", want: 400, code: "bad_request"},
		{name: "forged cursor", method: "GET", path: "/api/v1/sessions?cursor=AAAA", want: 400, code: "bad_request"},
		{name: "body over the limit", method: "POST", path: "/api/v1/sessions", body: `{"title":"` + strings.Repeat("x", 2<<20) + `"}`, headers: jsonCT, want: 413, code: "body_too_large"},
		{name: "X-Request-Id with non-ASCII is replaced", method: "GET", path: "/healthz", headers: map[string]string{"X-Request-Id": "café"}, want: 200, check: func(t *testing.T, r *http.Response) {
			// The replacement is a fresh id, which may hold "caf" among its hex digits.
			if id := r.Header.Get("X-Request-Id"); id == "" || strings.ContainsFunc(id, func(c rune) bool { return c > 0x7f }) {
				t.Errorf("X-Request-Id = %q", id)
			}
		}},
		{name: "CORS preflight needs no token", method: "OPTIONS", path: "/api/v1/sessions", headers: map[string]string{"Origin": attackOrigin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}, want: 204,
			check: wantHeader("Access-Control-Allow-Origin", attackOrigin)},
		{name: "CORS preflight from an unlisted origin", method: "OPTIONS", path: "/api/v1/sessions", headers: map[string]string{"Origin": "http://127.0.0.1:6666", "Access-Control-Request-Method": "POST"}, want: 204,
			check: wantHeader("Access-Control-Allow-Origin", "")},
		{name: "security headers on an API answer", method: "GET", path: "/api/v1/sessions", want: 200, check: func(t *testing.T, r *http.Response) {
			for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"} {
				if r.Header.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, r.Header.Get(k), v)
				}
			}
			if !strings.Contains(r.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("Content-Security-Policy = %q", r.Header.Get("Content-Security-Policy"))
			}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A user of its own per case, so the message rate of one case does not spill
			// into the next; every check below comes before the session's owner is looked up.
			tok := owner
			if !strings.Contains(tc.path, sid) {
				tok = a.userToken(t, fmt.Sprintf("bella-%d", i), auth.RoleUser)
			}
			resp := a.send(t, tc.method, tc.path, tok, tc.body, tc.headers)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s: %d, want %d: %.300s", tc.method, tc.path, resp.StatusCode, tc.want, body)
			}
			if tc.code != "" {
				var e errorBody
				if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != tc.code || e.Error.Message == "" {
					t.Fatalf("body %.300s, want a JSON error with code %s", body, tc.code)
				}
			}
			if tc.check != nil {
				resp.Body = io.NopCloser(strings.NewReader(string(body)))
				tc.check(t, resp)
			}
			a.healthy(t)
		})
	}
	t.Run("slow body is cut off with 408", func(t *testing.T) { slowBody(t, a, owner) })
	t.Run("slow headers are cut off", func(t *testing.T) { slowHeaders(t, a) })
	t.Run("one user cannot take every generation", func(t *testing.T) { perUserTurns(t, a) })
	t.Run("one user cannot post faster than the rate", func(t *testing.T) { perUserRate(t, a) })
}

func wantHeader(k, v string) func(t *testing.T, r *http.Response) {
	return func(t *testing.T, r *http.Response) {
		if got := r.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func wantBody(sub string) func(t *testing.T, r *http.Response) {
	return func(t *testing.T, r *http.Response) {
		if b := readAllString(t, r); !strings.Contains(b, sub) {
			t.Errorf("body %.300s lacks %s", b, sub)
		}
	}
}

// send makes one request with the bearer token and exactly the given body and headers.
func (a *attackServer) send(t *testing.T, method, path, tok, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 20*time.Second), method, a.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// healthy fails when the server no longer answers or its process ended.
func (a *attackServer) healthy(t *testing.T) {
	t.Helper()
	select {
	case <-a.proc.done:
		t.Fatalf("the server exited; stderr:\n%s", a.proc.stderr.String())
	default:
	}
	if resp := a.call(ctxFor(t, 5*time.Second), http.MethodGet, "/healthz", "", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz after the bad input: %d", resp.StatusCode)
	}
}

// slowBody sends a tenth of a body and waits: the 1s body timeout must answer 408.
func slowBody(t *testing.T, a *attackServer, tok string) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"title\":\"", tok)
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("still open after %v: %v", time.Since(start), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) > 10*time.Second {
		t.Fatalf("answered %d after %v, want 408 after about 1s", resp.StatusCode, time.Since(start))
	}
	a.healthy(t)
}

// slowHeaders sends half a request and waits: the 1s header timeout must close the
// connection.
func slowHeaders(t *testing.T, a *attackServer) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(a.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, err = io.ReadAll(conn) // the server's 408 (if any) and then EOF
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after %v", time.Since(start))
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("closed only after %v, want about 1s", time.Since(start))
	}
	a.healthy(t)
}

// perUserTurns: with PHASEFLOW_MAX_TURNS_PER_USER=1 a second generation of the same user
// answers 429 too_many_turns while another user is still served.
func perUserTurns(t *testing.T, a *attackServer) {
	greedy, other := a.userToken(t, "greedy", auth.RoleUser), a.userToken(t, "patient", auth.RoleUser)
	first := a.post(greedy, a.newSession(greedy, "en"), "hold it [[pace_ms:40]]")
	var e errorBody
	resp := a.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/sessions/"+a.newSession(greedy, "en")+"/messages", greedy, map[string]string{"text": "and another"}, &e)
	if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != "too_many_turns" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second generation of one user: %d %+v Retry-After %q", resp.StatusCode, e, resp.Header.Get("Retry-After"))
	}
	waitFinished(t, a.server, other, a.post(other, a.newSession(other, "en"), "my turn").MessageID)
	waitFinished(t, a.server, greedy, first.MessageID)
}

// perUserRate: with a burst of 3 and 1 message a minute, the fourth message in a row
// answers 429 too_many_messages with a Retry-After of about a minute.
func perUserRate(t *testing.T, a *attackServer) {
	chatty := a.userToken(t, "chatty", auth.RoleUser)
	sid := a.newSession(chatty, "en")
	for i := range 3 {
		var ta turnAnswer
		var e errorBody
		resp := a.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/sessions/"+sid+"/messages", chatty, map[string]string{"text": "hi"}, &ta)
		if resp.StatusCode != http.StatusAccepted {
			_ = json.Unmarshal([]byte(readAllString(t, resp)), &e)
			t.Fatalf("message %d of the burst: %d %+v", i+1, resp.StatusCode, e)
		}
		// Follow to the terminal event: the turn's slot is free by then (a GET of the
		// message can show it finished a moment earlier).
		a.openEvents(ctxFor(t, 30*time.Second), ta.eventsURL(), 0).readAll(t)
	}
	var e errorBody
	resp := a.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/sessions/"+sid+"/messages", chatty, map[string]string{"text": "hi again"}, &e)
	if resp.StatusCode != http.StatusTooManyRequests || e.Error.Code != "too_many_messages" {
		t.Fatalf("fourth message: %d %+v", resp.StatusCode, e)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After = %q", ra)
	}
}
