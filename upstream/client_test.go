package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTestClient returns a client for srv whose idle connections are closed when the test
// ends, so goleak sees no transport goroutines.
func newTestClient(t *testing.T, srv *httptest.Server) *Client {
	t.Helper()
	c := New(Config{BaseURL: srv.URL + "/v1/", APIKey: "sk-test"})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// serveTranscript returns a loopback server that answers every request with the recorded
// transcript testdata/name as an event stream.
func serveTranscript(t *testing.T, name string) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("X-Request-Id", "req_"+name)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// collect drains a stream, failing the test if an error is not the last item.
func collect(t *testing.T, seq func(func(Event, error) bool)) ([]Event, error) {
	t.Helper()
	var (
		events []Event
		last   error
	)
	for ev, err := range seq {
		if last != nil {
			t.Fatalf("item after the error %v: %+v, %v", last, ev, err)
		}
		if err != nil {
			last = err
			continue
		}
		events = append(events, ev)
	}
	return events, last
}

// errFields is the comparable part of an *Error, or nil for a nil error.
func errFields(t *testing.T, err error) *Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *upstream.Error", err, err)
	}
	return &Error{Kind: e.Kind, HTTPStatus: e.HTTPStatus, UpstreamCode: e.UpstreamCode, Message: e.Message, RetryAfter: e.RetryAfter}
}

var ignoreCause = cmpopts.IgnoreUnexported(Error{})

func TestStreamTranscripts(t *testing.T) {
	created := func(id, model, file string) Event {
		return Event{Kind: EventCreated, ResponseID: id, Model: model, UpstreamRequestID: "req_" + file}
	}
	delta := func(s string) Event { return Event{Kind: EventTextDelta, Delta: s} }
	const model = "gpt-4o-mini-2024-07-18"
	tests := []struct {
		file    string
		want    []Event
		wantErr *Error
	}{
		{
			file: "a_plain_text.sse",
			want: []Event{
				created("resp_1", model, "a_plain_text.sse"), delta("Hi"), delta(" there"),
				{Kind: EventCompleted, ResponseID: "resp_1", Model: model, Usage: &Usage{InputTokens: 37, OutputTokens: 11, TotalTokens: 48}},
			},
		},
		{
			file: "b_mcp_success.sse",
			want: []Event{
				created("resp_2", model, "b_mcp_success.sse"),
				{Kind: EventToolCallStarted, Tool: &ToolCall{ID: "mcp_1", ServerLabel: "deepwiki", Name: "ask_question"}},
				{Kind: EventToolCallDone, Tool: &ToolCall{ID: "mcp_1", ServerLabel: "deepwiki", Name: "ask_question", Arguments: `{"repoName":"a/b"}`, Output: "The repository a/b is a sample project."}},
				delta("It is a sample."),
				{Kind: EventCompleted, ResponseID: "resp_2", Model: model, Usage: &Usage{InputTokens: 410, OutputTokens: 52, TotalTokens: 462}},
			},
		},
		{
			file: "c_mcp_failure_retry.sse",
			want: []Event{
				created("resp_3", model, "c_mcp_failure_retry.sse"),
				{Kind: EventToolCallStarted, Tool: &ToolCall{ID: "mcp_A", ServerLabel: "market", Name: "search"}},
				{Kind: EventToolCallDone, Tool: &ToolCall{ID: "mcp_A", ServerLabel: "market", Name: "search", Arguments: `{"q":1}`, Error: "q must be a string", Failed: true}},
				{Kind: EventToolCallStarted, Tool: &ToolCall{ID: "mcp_B", ServerLabel: "market", Name: "search"}},
				{Kind: EventToolCallDone, Tool: &ToolCall{ID: "mcp_B", ServerLabel: "market", Name: "search", Arguments: `{"q":"1"}`, Output: "3 results"}},
				delta("Found 3."),
				{Kind: EventCompleted, ResponseID: "resp_3", Model: model, Usage: &Usage{InputTokens: 520, OutputTokens: 61, TotalTokens: 581}},
			},
		},
		{
			file:    "d_error_nested.sse",
			want:    []Event{created("resp_4", model, "d_error_nested.sse")},
			wantErr: &Error{Kind: KindProvider, UpstreamCode: "credit_balance_exhausted", Message: "You have no credits remaining."},
		},
		{
			file:    "d_error_flat.sse",
			want:    []Event{created("resp_5", model, "d_error_flat.sse")},
			wantErr: &Error{Kind: KindProvider, UpstreamCode: "ERR_SOMETHING", Message: "Something went wrong."},
		},
		{
			file:    "response_failed.sse",
			want:    []Event{created("resp_6", "", "response_failed.sse"), delta("Part")},
			wantErr: &Error{Kind: KindProvider, UpstreamCode: "server_error", Message: "The model failed to generate a response."},
		},
		{ // the same kind as a 429 or the chat wire's rate-limit chunk (codeKind)
			file:    "response_failed_rate_limited.sse",
			want:    []Event{created("resp_rl1", "gpt-4.1-mini-2025-04-14", "response_failed_rate_limited.sse")},
			wantErr: &Error{Kind: KindRateLimited, UpstreamCode: "rate_limit_exceeded", Message: "Rate limit reached for gpt-4.1-mini in organization org-x on tokens per min (TPM): Limit 200000, Used 199000, Requested 4000."},
		},
		{
			file:    "response_incomplete.sse",
			want:    []Event{created("resp_7", "", "response_incomplete.sse"), delta("Long")},
			wantErr: &Error{Kind: KindTruncated, UpstreamCode: "max_output_tokens", Message: "response incomplete: max_output_tokens"},
		},
		{
			file:    "eof_no_terminal.sse",
			want:    []Event{created("resp_8", "", "eof_no_terminal.sse"), delta("Cut")},
			wantErr: &Error{Kind: KindProvider, Message: "stream ended without a terminal event"},
		},
		{
			file:    "done_without_terminal.sse",
			want:    []Event{created("resp_10", "", "done_without_terminal.sse"), delta("x")},
			wantErr: &Error{Kind: KindProvider, Message: "stream ended without a terminal event"},
		},
		{
			file:    "untyped_error.sse",
			want:    []Event{created("resp_11", "", "untyped_error.sse")},
			wantErr: &Error{Kind: KindUnavailable, UpstreamCode: "502", Message: "Provider returned error"},
		},
		{
			file: "lenient.sse",
			want: []Event{
				created("resp_9", "m", "lenient.sse"), delta("multi"), delta("-line"),
				{Kind: EventCompleted, ResponseID: "resp_9b", Model: "m", Usage: &Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".sse"), func(t *testing.T) {
			c := newTestClient(t, serveTranscript(t, tt.file))
			got, err := collect(t, c.Stream(t.Context(), Request{Model: "gpt-4o-mini"}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErr, errFields(t, err), ignoreCause); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStreamHTTPErrors(t *testing.T) {
	jsonErr := func(msg, typ, code string) string {
		return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%q}}`, msg, typ, code)
	}
	tests := []struct {
		name        string
		status      int
		contentType string
		header      http.Header
		body        string
		want        *Error
		sentinel    error
	}{
		{
			name: "400 unknown previous response", status: 400,
			body: jsonErr("Previous response with id 'resp_x' not found.", "invalid_request_error", "previous_response_not_found"),
			want: &Error{Kind: KindProvider, HTTPStatus: 400, UpstreamCode: "previous_response_not_found", Message: "Previous response with id 'resp_x' not found."}, sentinel: ErrProvider,
		},
		{
			name: "401 bad key", status: 401,
			body: jsonErr("Incorrect API key provided: sk-test.", "invalid_request_error", "invalid_api_key"),
			want: &Error{Kind: KindProvider, HTTPStatus: 401, UpstreamCode: "invalid_api_key", Message: "Incorrect API key provided: sk-test."}, sentinel: ErrProvider,
		},
		{
			name: "424 MCP tool listing failed", status: 424,
			body: jsonErr("Error retrieving tool list from MCP server: 'lbl'. Http status code: 424 (Failed Dependency)", "external_connector_error", "http_error"),
			want: &Error{Kind: KindProvider, HTTPStatus: 424, UpstreamCode: "http_error", Message: "Error retrieving tool list from MCP server: 'lbl'. Http status code: 424 (Failed Dependency)"}, sentinel: ErrProvider,
		},
		{
			name: "429 with Retry-After", status: 429, header: http.Header{"Retry-After": {"2"}},
			body: jsonErr("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
			want: &Error{Kind: KindRateLimited, HTTPStatus: 429, UpstreamCode: "rate_limit_exceeded", Message: "Rate limit reached for requests", RetryAfter: 2 * time.Second}, sentinel: ErrRateLimited,
		},
		{
			name: "429 retry-after-ms wins", status: 429, header: http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"1500"}},
			body: jsonErr("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
			want: &Error{Kind: KindRateLimited, HTTPStatus: 429, UpstreamCode: "rate_limit_exceeded", Message: "Rate limit reached for requests", RetryAfter: 1500 * time.Millisecond}, sentinel: ErrRateLimited,
		},
		{
			// A billing stop: waiting will not lift it, so it is not a rate limit.
			name: "429 quota without Retry-After", status: 429,
			body: `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":null}}`,
			want: &Error{Kind: KindProvider, HTTPStatus: 429, UpstreamCode: "insufficient_quota", Message: "You exceeded your current quota."}, sentinel: ErrProvider,
		},
		{
			name: "500 server error", status: 500,
			body: jsonErr("The server had an error while processing your request.", "server_error", "server_error"),
			want: &Error{Kind: KindUnavailable, HTTPStatus: 500, UpstreamCode: "server_error", Message: "The server had an error while processing your request."}, sentinel: ErrUnavailable,
		},
		{
			name: "503 plain text from a proxy", status: 503, contentType: "text/plain",
			body: "upstream connect error or disconnect/reset before headers\n",
			want: &Error{Kind: KindUnavailable, HTTPStatus: 503, Message: "upstream connect error or disconnect/reset before headers"}, sentinel: ErrUnavailable,
		},
		{
			name: "503 empty body", status: 503,
			want: &Error{Kind: KindUnavailable, HTTPStatus: 503, Message: "Service Unavailable"}, sentinel: ErrUnavailable,
		},
		{
			name: "200 with a proxy's page instead of a stream", status: 200, contentType: "text/html",
			body: `<html>Sign in to the proxy</html>`,
			want: &Error{Kind: KindProvider, HTTPStatus: 200, Message: `upstream answered "text/html" instead of text/event-stream: <html>Sign in to the proxy</html>`}, sentinel: ErrProvider,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, vs := range tt.header {
					w.Header()[k] = vs
				}
				w.Header().Set("Content-Type", firstNonEmpty(tt.contentType, "application/json"))
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			events, err := collect(t, newTestClient(t, srv).Stream(t.Context(), Request{Model: "m"}))
			if len(events) != 0 {
				t.Errorf("got events %+v before the error", events)
			}
			if diff := cmp.Diff(tt.want, errFields(t, err), ignoreCause); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.sentinel)
			}
		})
	}
}

func TestStreamTransportErrors(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		c := New(Config{BaseURL: url})
		t.Cleanup(c.CloseIdleConnections)
		_, err := collect(t, c.Stream(t.Context(), Request{}))
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v, want upstream_unavailable", err)
		}
	})
	t.Run("response headers too slow", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}))
		t.Cleanup(srv.Close)
		tr := NewTransport()
		tr.ResponseHeaderTimeout = 50 * time.Millisecond
		c := New(Config{BaseURL: srv.URL, Transport: tr})
		t.Cleanup(c.CloseIdleConnections)
		_, err := collect(t, c.Stream(t.Context(), Request{}))
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want upstream_timeout", err)
		}
	})
}

func TestStreamSendsRequest(t *testing.T) {
	type seen struct {
		method, path string
		header       http.Header
		body         map[string]any
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		got <- seen{r.Method, r.URL.Path, r.Header.Clone(), body}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_x\"}}\n\n")
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv)
	req := Request{
		Model:              "gpt-test",
		Instructions:       "Be brief.",
		Input:              []InputItem{{Role: "user", Content: "hello"}},
		Tools:              []json.RawMessage{json.RawMessage(`{"type":"mcp","server_label":"x","require_approval":"never"}`)},
		ToolChoice:         "auto",
		MaxOutputTokens:    256,
		PreviousResponseID: "resp_prev",
		Headers:            http.Header{"X-Trace": {"t1"}, "Accept": {"application/json"}},
	}
	if _, err := collect(t, c.Stream(t.Context(), req)); err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.method != http.MethodPost || s.path != "/v1/responses" {
		t.Errorf("request line = %s %s, want POST /v1/responses", s.method, s.path)
	}
	for k, want := range map[string]string{"Authorization": "Bearer sk-test", "Accept": "text/event-stream", "Content-Type": "application/json", "X-Trace": "t1"} {
		if got := s.header.Values(k); len(got) != 1 || got[0] != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	wantBody := map[string]any{
		"model": "gpt-test", "instructions": "Be brief.", "stream": true,
		"input":                []any{map[string]any{"role": "user", "content": "hello"}},
		"tools":                []any{map[string]any{"type": "mcp", "server_label": "x", "require_approval": "never"}},
		"tool_choice":          "auto",
		"max_output_tokens":    float64(256),
		"previous_response_id": "resp_prev",
	}
	if diff := cmp.Diff(wantBody, s.body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}

	// A bare request carries only the model and stream, and no Authorization without a key.
	bare := New(Config{BaseURL: srv.URL})
	t.Cleanup(bare.CloseIdleConnections)
	if _, err := collect(t, bare.Stream(t.Context(), Request{Model: "m"})); err != nil {
		t.Fatal(err)
	}
	s = <-got
	if diff := cmp.Diff(map[string]any{"model": "m", "stream": true}, s.body); diff != "" {
		t.Errorf("bare body (-want +got):\n%s", diff)
	}
	if a := s.header.Get("Authorization"); a != "" {
		t.Errorf("Authorization = %q without an API key", a)
	}
}

// A NUL character the model sends ("\u0000" is valid JSON) reaches the caller as U+FFFD on
// both wires, in the text and in a tool's output: PostgreSQL cannot store a NUL in text,
// and a reply holding one would otherwise be lost at its terminal commit.
func TestStreamsCarryNoNUL(t *testing.T) {
	resp := newTestClient(t, serveTranscript(t, "nul_in_text.sse"))
	chat := newTestChat(t, newChatServer(t, "chat_nul_in_text.sse").Server, nil, 0)
	for _, tc := range []struct {
		name                 string
		stream               func(func(Event, error) bool)
		wantText, wantOutput string
	}{
		{"responses", resp.Stream(t.Context(), Request{Model: "m"}), "It is\uFFFD a sample.", "The repository a/b\uFFFD is a sample project."},
		{"chat completions", chat.Stream(t.Context(), Request{Model: "m"}), "Hi the\uFFFDre", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, err := collect(t, tc.stream)
			if err != nil {
				t.Fatal(err)
			}
			var text, output string
			for _, ev := range events {
				text += ev.Delta
				if ev.Kind == EventToolCallDone {
					output = ev.Tool.Output
				}
			}
			if text != tc.wantText || output != tc.wantOutput {
				t.Errorf("text %q, tool output %q; want %q, %q", text, output, tc.wantText, tc.wantOutput)
			}
		})
	}
}
