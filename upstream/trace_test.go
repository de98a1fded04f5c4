package upstream

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTraceRedactsWhatWasSent sends a request with an MCP tool carrying an x-mcp-context
// token through a real client to a loopback server, and checks what the trace keeps: the
// request as the server received it, with the API key and the token replaced and nothing
// else touched.
func TestTraceRedactsWhatWasSent(t *testing.T) {
	var received []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\"}}\n\n")
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv)
	const token = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ1MSJ9.c2lnbmF0dXJl"
	tool, _ := json.Marshal(map[string]any{"type": "mcp", "server_label": "risk_lab", "server_url": "http://127.0.0.1:9/risk",
		"allowed_tools": []string{"run_stress_scenarios"}, "headers": map[string]string{"x-mcp-context": token}})
	var sent []Sent
	ctx := WithTrace(context.Background(), func(s Sent) { sent = append(sent, s) })
	req := Request{Model: "m", Instructions: "Answer in English.", Input: []InputItem{{Role: "user", Content: "hello token"}},
		Tools: []json.RawMessage{tool}, Headers: http.Header{"X-Api-Key": {"sk-other"}, "X-Trace": {"keep"}}}
	if _, err := collect(t, c.Stream(ctx, req)); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 {
		t.Fatalf("%d traced requests, want 1", len(sent))
	}
	s := sent[0].Redacted()
	for _, secret := range []string{"sk-test", "sk-other", token} {
		if strings.Contains(s.Body, secret) || strings.Contains(s.URL, secret) || strings.Contains(strings.Join(flatten(s.Header), " "), secret) {
			t.Errorf("the trace keeps the secret %q", secret)
		}
	}
	if got := s.Header.Get("Authorization"); got != "Bearer "+Redacted {
		t.Errorf("Authorization = %q, want the scheme kept and the key redacted", got)
	}
	if s.Header.Get("X-Trace") != "keep" || s.Method != http.MethodPost || !strings.HasSuffix(s.URL, "/v1/responses") {
		t.Errorf("trace %+v lost what was no secret", s)
	}
	if want := strings.Replace(string(received), token, Redacted, 1); s.Body != want || s.Truncated {
		t.Errorf("traced body differs from the one received beyond the token:\n%s\n%s", s.Body, received)
	}
}

func flatten(h http.Header) []string {
	var out []string
	for k, vs := range h {
		out = append(out, k+": "+strings.Join(vs, ","))
	}
	return out
}

func TestTraceRedaction(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"tool headers, any name", `{"tools":[{"headers":{"x-mcp-context":"t1","X-Other":"t2"}}],"input":"t1 stays as text"}`,
			`{"tools":[{"headers":{"x-mcp-context":"[redacted]","X-Other":"[redacted]"}}],"input":"t1 stays as text"}`},
		{"credential keys anywhere", `{"api_key":"k1","nested":{"client_secret":"s1"},"max_output_tokens":10}`,
			`{"api_key":"[redacted]","nested":{"client_secret":"[redacted]"},"max_output_tokens":10}`},
		{"not JSON is kept", `plain`, `plain`},
		{"nothing secret is kept as sent", `{"model":"m", "input":[{"role":"user","content":"hi"}]}`, `{"model":"m", "input":[{"role":"user","content":"hi"}]}`},
		{"a secret in an unusual escape is still replaced", `{"headers":{"x-mcp-context":"t\u0031"}}`, `{"headers":{"x-mcp-context":"[redacted]"}}`},
		{"a key in an escape is still read", `{"he\u0061ders":{"X-Any":"t1"},"\u0074oken":"t2"}`, `{"he\u0061ders":{"X-Any":"[redacted]"},"\u0074oken":"[redacted]"}`},
		{"a secret deep in arrays", `{"a":[[{"b":[{"password":"p1"}]}]]}`, `{"a":[[{"b":[{"password":"[redacted]"}]}]]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(redactBody([]byte(tc.body))); got != tc.want {
				t.Errorf("redactBody = %s, want %s", got, tc.want)
			}
		})
	}
	u, _ := http.NewRequest(http.MethodGet, "https://user:pw@example.com/v1?key=abc&model=m", nil)
	if got := redactURL(u.URL); strings.Contains(got, "abc") || strings.Contains(got, "pw") || !strings.Contains(got, "model=m") {
		t.Errorf("redactURL = %s", got)
	}
	long := strings.Repeat("é", MaxTraceBody) // 2 bytes each: the cut lands inside one
	if got, cut := capBody([]byte(long)); !cut || len(got) > MaxTraceBody || !strings.HasPrefix(long, got) {
		t.Errorf("capBody cut %v to %d bytes, not at a character boundary within the cap", cut, len(got))
	}
}

// FuzzRedactBody: redaction never panics and leaves no secret value in a JSON body,
// however the body writes it.
func FuzzRedactBody(f *testing.F) {
	f.Add(`{"tools":[{"headers":{"x-mcp-context":"tok-123"}}],"input":"hi"}`)
	f.Add(`{"api_key":"k","nested":[{"token":"t"}]}`)
	f.Add(`{"tools":[{"headers":{"x-mcp-context":"tok\u002d123"}}]}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, body string) {
		out := redactBody([]byte(body))
		if !json.Valid([]byte(body)) {
			if string(out) != body {
				t.Fatalf("a body that is not JSON was changed: %q", out)
			}
			return
		}
		if left := secretsIn(out); len(left) > 0 {
			t.Fatalf("redacted body %s still holds %q", out, left)
		}
	})
}

// BenchmarkRedactBody: the trace of a turn's request, which holds no secret unless MCP
// servers are configured (a request body of the size loadbench's turn sends).
func BenchmarkRedactBody(b *testing.B) {
	body := []byte(`{"model":"m","instructions":"` + strings.Repeat("You are a careful quant assistant. ", 150) +
		`","input":[{"role":"user","content":"Draft a momentum strategy for BTC"}],"max_output_tokens":4000,"stream":true}`)
	b.ReportAllocs()
	for b.Loop() {
		redactBody(body)
	}
}

// A base URL with a query (Azure's api-version) keeps its query, the route goes on its
// path, on both wires, and the trace shows where the request went with only the key
// redacted.
func TestBaseURLWithAQuery(t *testing.T) {
	type seen struct{ path, query string }
	got := make(chan seen, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.Path, r.URL.RawQuery}
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			_, _ = io.WriteString(w, "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		_, _ = io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\"}}\n\n")
	}))
	t.Cleanup(srv.Close)
	base := srv.URL + "/openai/v1/?api-version=2025-04-01-preview&api-key=sk-azure-secret"
	responses := New(Config{BaseURL: base})
	chat := NewChat(ChatConfig{BaseURL: base})
	t.Cleanup(responses.CloseIdleConnections)
	t.Cleanup(chat.CloseIdleConnections)
	cases := []struct {
		name   string
		stream func(context.Context, Request) iter.Seq2[Event, error]
		path   string
	}{
		{"responses", responses.Stream, "/openai/v1/responses"},
		{"chat", chat.Stream, "/openai/v1/chat/completions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sent []Sent
			ctx := WithTrace(context.Background(), func(s Sent) { sent = append(sent, s) })
			if _, err := collect(t, tc.stream(ctx, Request{Model: "m", Input: []InputItem{{Role: "user", Content: "hi"}}})); err != nil {
				t.Fatal(err)
			}
			s := <-got
			if s.path != tc.path || !strings.Contains(s.query, "api-version=2025-04-01-preview") {
				t.Fatalf("the request went to %s?%s, want %s with the base's query", s.path, s.query, tc.path)
			}
			if len(sent) != 1 {
				t.Fatalf("%d traced requests", len(sent))
			}
			u := sent[0].Redacted().URL
			if !strings.Contains(u, tc.path+"?") || !strings.Contains(u, "api-version=2025-04-01-preview") || strings.Contains(u, "sk-azure-secret") {
				t.Fatalf("the trace's URL is %s: want the real path and query, the key redacted", u)
			}
		})
	}
}
