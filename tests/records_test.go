package tests

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// upstreamKey is the API key the server under test sends upstream; no trace may show it.
const upstreamKey = "sk-e2e-upstream-secret-4711"

// callsOf returns the name@attempt of each tool call record, in order.
func callsOf(t *testing.T, records any) []string {
	t.Helper()
	var out []string
	for _, r := range anyList(records) {
		c, _ := r.(map[string]any)
		a, _ := c["attempt"].(float64)
		out = append(out, c["name"].(string)+"@"+strings.Repeat("I", int(a)))
	}
	return out
}

// TestEveryToolCallIsRecorded: a tool that ran is shown and stored whatever became of its
// turn: in a refused attempt (attempt 1, the turn completing on attempt 2), in a turn the
// upstream broke off, and in a cancelled turn. completed.metadata (or the error event) and
// GET /messages/{id} show the same records.
func TestEveryToolCallIsRecorded(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("tilda")
		cases := []struct {
			name, text, end, code string
			cancel                bool
			want                  []string
		}{
			{"a refused attempt's calls", "Draft a BTC momentum strategy [[fault:broken_xml_once]]", "completed", "", false,
				[]string{"validate_strategy@I", "validate_strategy@II"}},
			{"a turn the upstream broke off", "Draft a BTC momentum strategy [[fault:mid_stream_error]]", "error", "provider_error", false,
				[]string{"validate_strategy@I"}},
			{"a cancelled turn", "Draft a BTC momentum strategy [[fault:stall]]", "error", "cancelled", true,
				[]string{"validate_strategy@I"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				a := s.post(tok, s.newSession(tok, "en"), tc.text)
				st := s.openEvents(ctxFor(t, 60*time.Second), a.eventsURL(), 0)
				var evs []sseEvent
				if tc.cancel {
					evs = readDeltas(t, st, 1)
					if resp := s.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/messages/"+a.MessageID+"/cancel", tok, nil, nil); resp.StatusCode != http.StatusAccepted {
						t.Fatalf("cancel = %d", resp.StatusCode)
					}
				}
				evs = append(evs, st.readAll(t)...)
				logs := logged(evs)
				last := logs[len(logs)-1]
				if last.Name != tc.end || (tc.code != "" && last.Data["code"] != tc.code) {
					t.Fatalf("turn ended with %s %v, want %s %s", last.Name, last.Data, tc.end, tc.code)
				}
				shown := last.Data["tool_calls"]
				if tc.end == "completed" {
					shown = last.Data["metadata"].(map[string]any)["tool_calls"]
				}
				if got := callsOf(t, shown); strings.Join(got, " ") != strings.Join(tc.want, " ") {
					t.Fatalf("the %s event shows tool calls %v, want %v", tc.end, got, tc.want)
				}
				msg := waitFinished(t, s, tok, a.MessageID)
				if !reflect.DeepEqual(msg["tool_calls"], shown) {
					t.Fatalf("GET /messages/%s tool_calls = %v, want what the %s event showed: %v", a.MessageID, msg["tool_calls"], tc.end, shown)
				}
			})
		}
	})
}

// trace is GET /api/v1/messages/{id}/trace.
type trace struct {
	MessageID string `json:"message_id"`
	Attempts  []struct {
		Attempt  int `json:"attempt"`
		Requests []struct {
			Attempt   int                 `json:"attempt"`
			Seq       int                 `json:"seq"`
			Method    string              `json:"method"`
			URL       string              `json:"url"`
			Headers   map[string][]string `json:"headers"`
			Body      string              `json:"body"`
			Truncated bool                `json:"truncated"`
		} `json:"requests"`
	} `json:"attempts"`
}

// TestTraceOfAMessage: the requests sent upstream for a retried message, per attempt, as
// the upstream received them but with the API key and the x-mcp-context tokens redacted;
// for the message's owner and admins only.
func TestTraceOfAMessage(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t, "PHASEFLOW_UPSTREAM_API_KEY="+upstreamKey)
		tok, admin, other := s.token("uma"), s.adminToken("ops"), s.token("victor")
		a := s.post(tok, s.newSession(tok, "en"), "Draft a BTC momentum strategy [[fault:broken_xml_once]]")
		s.follow(a)
		waitFinished(t, s, tok, a.MessageID)
		received := allRecorded(t, s)

		var tr trace
		if code := apiGet(t, s, tok, "/api/v1/messages/"+a.MessageID+"/trace", &tr); code != http.StatusOK {
			t.Fatalf("GET trace as the owner = %d", code)
		}
		if tr.MessageID != a.MessageID || len(tr.Attempts) != 2 || tr.Attempts[0].Attempt != 1 || tr.Attempts[1].Attempt != 2 {
			t.Fatalf("trace = %+v, want attempts 1 and 2", tr)
		}
		raw, _ := json.Marshal(tr)
		secrets := []string{upstreamKey}
		for _, rec := range received {
			for _, tool := range anyList(rec.Body["tools"]) {
				h, _ := tool.(map[string]any)["headers"].(map[string]any)
				if tok, _ := h["x-mcp-context"].(string); tok != "" {
					secrets = append(secrets, tok)
				}
			}
		}
		if len(secrets) < 2 {
			t.Fatal("the upstream got no x-mcp-context token, so the redaction cannot be checked")
		}
		for _, secret := range secrets {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("the trace shows the secret %.12s…", secret)
			}
		}
		for i, at := range tr.Attempts {
			if len(at.Requests) != 1 {
				t.Fatalf("attempt %d has %d requests, want 1", at.Attempt, len(at.Requests))
			}
			r := at.Requests[0]
			if r.Method != http.MethodPost || !strings.HasSuffix(r.URL, "/responses") || r.Truncated ||
				strings.Join(r.Headers["Authorization"], "") != "Bearer [redacted]" {
				t.Fatalf("attempt %d request %+v", at.Attempt, r)
			}
			var body map[string]any
			if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
				t.Fatalf("attempt %d body is not the JSON sent: %v", at.Attempt, err)
			}
			sent := received[len(received)-2+i].Body
			if body["instructions"] != sent["instructions"] || !reflect.DeepEqual(body["input"], sent["input"]) {
				t.Fatalf("attempt %d: the traced body differs from what the upstream received", at.Attempt)
			}
		}
		if !strings.Contains(tr.Attempts[1].Requests[0].Body, "malformed_xml") {
			t.Fatal("attempt 2's traced instructions lack the correction note")
		}

		if code := apiGet(t, s, admin, "/api/v1/messages/"+a.MessageID+"/trace", &trace{}); code != http.StatusOK {
			t.Fatalf("GET trace as an admin = %d, want 200", code)
		}
		if code := apiGet(t, s, other, "/api/v1/messages/"+a.MessageID+"/trace", nil); code != http.StatusNotFound {
			t.Fatalf("GET trace as another user = %d, want 404", code)
		}
		if code := apiGet(t, s, "", "/api/v1/messages/"+a.MessageID+"/trace", nil); code != http.StatusUnauthorized {
			t.Fatalf("GET trace without a token = %d, want 401", code)
		}
	})
}

// TestTraceIsWrittenWhileTheReplyStreams: a turn does not keep its request (its whole
// prompt) while the reply streams: once the first delta has reached clients, the trace
// goes to the event log and is written moments later (with the next delta, or alone after
// the log's short wait), seconds before a slow model's next delta, and the turn's end does not
// write it a second time.
func TestTraceIsWrittenWhileTheReplyStreams(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("tess")
		a := s.post(tok, s.newSession(tok, "en"), "A slow plain reply [[scenario:default]] [[pace_ms:3000]]")
		waitForFirstDelta(t, s, a)
		path := "/api/v1/messages/" + a.MessageID
		var tr trace
		for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
			tr = trace{}
			code := apiGet(t, s, tok, path+"/trace", &tr)
			if code == http.StatusOK && len(tr.Attempts) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("trace a second after the first delta = %d %+v; want the request (the next delta is 3 s away)", code, tr)
			}
		}
		var msg map[string]any
		apiGet(t, s, tok, path, &msg)
		if msg["status"] != "streaming" {
			t.Fatalf("message is %v after its first delta; want streaming", msg["status"])
		}
		// The reply would stream for 90 s: cancel it. Its error event writes what the turn
		// still holds, which must not be the trace again.
		if resp := s.call(ctxFor(t, 10*time.Second), http.MethodPost, path+"/cancel", tok, nil, nil); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancel = %d, want 202", resp.StatusCode)
		}
		if msg = waitFinished(t, s, tok, a.MessageID); msg["status"] == "streaming" {
			t.Fatalf("message still %v", msg["status"])
		}
		tr = trace{}
		apiGet(t, s, tok, path+"/trace", &tr)
		if len(tr.Attempts) != 1 || len(tr.Attempts[0].Requests) != 1 || tr.Attempts[0].Requests[0].Seq != 1 {
			t.Fatalf("trace after the end = %+v; want the one request, once", tr)
		}
	})
}
