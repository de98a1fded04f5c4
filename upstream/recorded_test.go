package upstream

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Real providers' answers (testdata/recorded, sources in SOURCES.md), replayed as the
// upstream on their own wire: what each deserves to be read as.
func TestRecordedAnswers(t *testing.T) {
	const gone = "I'm sorry, I can't assist with that request."
	cases := []struct {
		file    string
		text    string // the answer's text; "" for none
		isJSON  bool   // the text is a JSON object (checked instead of the text)
		kind    *Kind  // the failure's kind; nil for a completed answer
		message string // the failure's message
		code    string // the provider's code
	}{
		{file: "chat_openai_strict.sse", text: `{"city":"San Francisco","temperature":61,"units":"f"}`},
		{file: "chat_openai_json_mode.sse", isJSON: true},
		{file: "chat_openai_refusal.sse", kind: kindOf(KindRefused), message: gone, code: "refusal"},
		{file: "chat_openai_length.sse", text: `{"`, kind: kindOf(KindTruncated), message: "response incomplete: length", code: "length"},
		{file: "chat_openai_strict.json", text: `{"city":"San Francisco","temperature":65,"units":"f"}`},
		{file: "chat_openai_refusal.json", kind: kindOf(KindRefused), message: "I'm very sorry, but I can't assist with that.", code: "refusal"},
		{file: "chat_openai_length.json", text: `{"`, kind: kindOf(KindTruncated), message: "response incomplete: length", code: "length"},
		{file: "chat_deepseek_json.json", text: "{\n  \"location\": \"San Francisco\",\n  \"condition\": \"cloudy\",\n  \"temperature\": 7\n}"},
		{file: "chat_deepseek_reasoning.sse", text: `The word "strawberry" contains three "r"s.`},
		{file: "chat_fenced_json.json", text: "```json\n{\n\"chip\": \"Apple M1\",\n\"year\": 2020,\n\"cores\": \"8\"\n}\n```"},
		{file: "responses_openai_text.json", text: "I can't provide real-time updates, but you can easily check the current weather in San Francisco using a weather website or app. Typically, San Francisco has cool, foggy summers and mild winters, so it's good to be prepared for variable weather!"},
		{file: "responses_openai_insufficient_quota.sse", kind: kindOf(KindProvider), code: "insufficient_quota",
			message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."},
		{file: "responses_documented_refusal.sse", kind: kindOf(KindRefused), message: gone, code: "refusal"},
		{file: "responses_documented_incomplete.sse", text: `{"status":"has_q`, kind: kindOf(KindTruncated), message: "response incomplete: max_output_tokens", code: "max_output_tokens"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			text, last, err := replay(t, tc.file)
			switch {
			case tc.isJSON && !json.Valid([]byte(text)):
				t.Errorf("the answer is not JSON: %q", text)
			case !tc.isJSON && text != tc.text:
				t.Errorf("text %q, want %q", text, tc.text)
			}
			if tc.kind == nil {
				if err != nil || last.Kind != EventCompleted {
					t.Errorf("ended with %v, last event %s; want completed", err, last.Kind)
				}
				return
			}
			var ue *Error
			if !errors.As(err, &ue) || ue.Kind != *tc.kind || ue.Message != tc.message || ue.UpstreamCode != tc.code {
				t.Errorf("error %v, want %s [%s]: %s", err, tc.kind, tc.code, tc.message)
			}
		})
	}
}

func kindOf(k Kind) *Kind { return &k }

// replay serves testdata/recorded/file as the upstream of its wire (chat_… Chat
// Completions, responses_… Responses; .sse as an event stream, .json whole) and returns
// the text the client read, the last event and the error it ended with.
func replay(t *testing.T, file string) (string, Event, error) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", "recorded", file))
	if err != nil {
		t.Fatal(err)
	}
	ctype := "text/event-stream"
	if strings.HasSuffix(file, ".json") {
		ctype = "application/json"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	collectAll := func(seq func(func(Event, error) bool)) ([]Event, error) {
		var evs []Event
		var last error
		seq(func(ev Event, err error) bool {
			if err != nil {
				last = err
				return false
			}
			evs = append(evs, ev)
			return true
		})
		return evs, last
	}
	var evs []Event
	if strings.HasPrefix(file, "chat_") {
		c := NewChat(ChatConfig{BaseURL: srv.URL + "/v1"})
		t.Cleanup(c.CloseIdleConnections)
		evs, err = collectAll(c.Stream(t.Context(), Request{Model: "m"}))
	} else {
		c := New(Config{BaseURL: srv.URL + "/v1"})
		t.Cleanup(c.CloseIdleConnections)
		evs, err = collectAll(c.Stream(t.Context(), Request{Model: "m"}))
	}
	var text strings.Builder
	var last Event
	for _, ev := range evs {
		if ev.Kind == EventTextDelta {
			text.WriteString(ev.Delta)
		}
		last = ev
	}
	return text.String(), last, err
}
