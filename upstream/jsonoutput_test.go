package upstream

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A JSON request is encoded as each wire documents it: the schema with strict: true in
// structured mode, nothing but the text rules (after the instructions) in text_json mode,
// and temperature either way (docs/json-skills.md).
func TestJSONOutputOnBothWires(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	zero := 0.0
	cases := []struct {
		name, mode string
		// wantResponses and wantChat are the body fields beyond model, input and stream.
		wantResponses, wantChat map[string]any
	}{
		{"structured", JSONModeStructured,
			map[string]any{"instructions": "Extract.", "temperature": 0.0,
				"text": map[string]any{"format": map[string]any{"type": "json_schema", "name": "post_views", "schema": map[string]any{"type": "object"}, "strict": true}}},
			map[string]any{"system": "Extract.", "temperature": 0.0,
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "post_views", "schema": map[string]any{"type": "object"}, "strict": true}}}},
		{"text_json", JSONModeTextJSON,
			map[string]any{"instructions": "Extract. Only JSON.", "temperature": 0.0},
			map[string]any{"system": "Extract. Only JSON.", "temperature": 0.0}},
		{"no mode counts as text_json", "",
			map[string]any{"instructions": "Extract. Only JSON.", "temperature": 0.0},
			map[string]any{"system": "Extract. Only JSON.", "temperature": 0.0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Model: "m", Instructions: "Extract.", Input: []InputItem{{Role: "user", Content: "post"}},
				Temperature: &zero, JSON: &JSONOutput{Name: "post_views", Schema: schema, TextRules: "Only JSON.", Mode: tc.mode}}

			got := bodyOf(t, func(srv *httptest.Server) { _, _ = collect(t, newTestClient(t, srv).Stream(t.Context(), req)) })
			for _, k := range []string{"model", "input", "stream"} {
				delete(got, k)
			}
			if diff := cmp.Diff(tc.wantResponses, got); diff != "" {
				t.Errorf("responses body (-want +got):\n%s", diff)
			}

			got = bodyOf(t, func(srv *httptest.Server) {
				_, _ = collect(t, newTestChat(t, srv, nil, 0).Stream(t.Context(), req))
			})
			msgs := got["messages"].([]any)
			got["system"] = msgs[0].(map[string]any)["content"]
			for _, k := range []string{"model", "messages", "stream", "stream_options"} {
				delete(got, k)
			}
			if diff := cmp.Diff(tc.wantChat, got); diff != "" {
				t.Errorf("chat body (-want +got):\n%s", diff)
			}
		})
	}
}

// bodyOf runs send against a server that records the request body and answers with an
// empty event stream, and returns that body.
func bodyOf(t *testing.T, send func(*httptest.Server)) map[string]any {
	t.Helper()
	got := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("request body is not JSON: %v", err)
		}
		got <- body
		w.Header().Set("Content-Type", "text/event-stream")
	}))
	t.Cleanup(srv.Close)
	send(srv)
	return <-got
}

func TestResolveJSONMode(t *testing.T) {
	cases := []struct{ mode, provider, want string }{
		{"", ProviderOpenAI, JSONModeStructured},
		{JSONModeAuto, ProviderOpenAI, JSONModeStructured},
		{JSONModeAuto, ProviderOpenRouter, JSONModeTextJSON},
		{JSONModeAuto, ProviderOllama, JSONModeTextJSON},
		{JSONModeAuto, "scripted", JSONModeTextJSON},
		{JSONModeStructured, ProviderOpenRouter, JSONModeStructured},
		{JSONModeTextJSON, ProviderOpenAI, JSONModeTextJSON},
	}
	for _, tc := range cases {
		if got := ResolveJSONMode(tc.mode, tc.provider); got != tc.want {
			t.Errorf("ResolveJSONMode(%q, %q) = %q, want %q", tc.mode, tc.provider, got, tc.want)
		}
	}
}
