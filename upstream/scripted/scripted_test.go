package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"go.uber.org/goleak"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/upstream/scripted"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start serves a scripted upstream on loopback for one test and returns it with a client.
func start(t *testing.T, opts scripted.Options) (*scripted.Running, *upstream.Client) {
	t.Helper()
	run, err := scripted.Listen(t.Context(), "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	c := upstream.New(upstream.Config{BaseURL: run.URL()})
	t.Cleanup(func() {
		c.CloseIdleConnections()
		if err := run.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return run, c
}

// turn is what a test saw of one streamed response.
type turn struct {
	events []upstream.Event
	text   string
	chunks []string // the text deltas, in order
	deltas int
	err    error
	sent   time.Time // when the request was sent
	first  time.Time // when the first delta arrived
}

// completed reports whether the response ended with EventCompleted.
func (tr turn) completed() bool {
	return len(tr.events) > 0 && tr.events[len(tr.events)-1].Kind == upstream.EventCompleted
}

// ask streams one request whose latest user message is userText.
func ask(ctx context.Context, c *upstream.Client, instructions, userText string) turn {
	var tr turn
	req := upstream.Request{
		Model:        "scripted-test",
		Instructions: instructions,
		Input:        []upstream.InputItem{{Role: "user", Content: "an earlier question"}, {Role: "assistant", Content: "an answer"}, {Role: "user", Content: userText}},
	}
	tr.sent = time.Now()
	for ev, err := range c.Stream(ctx, req) {
		if err != nil {
			tr.err = err
			break
		}
		tr.events = append(tr.events, ev)
		switch ev.Kind {
		case upstream.EventTextDelta:
			if tr.deltas == 0 {
				tr.first = time.Now()
			}
			tr.deltas++
			tr.text += ev.Delta
			tr.chunks = append(tr.chunks, ev.Delta)
		}
	}
	return tr
}

// wellFormed is the structural check of a reply: the ThinkingML validator when it agrees,
// plus the shape any reply of the scripted upstream has.
func wellFormed(reply string) bool {
	shape := strings.HasPrefix(reply, "<thinking>\n<phase id=\"1\"><title>") &&
		strings.Contains(reply, "</thinking>\n<final>\n") &&
		strings.Contains(reply, "\n<!-- <serp_queries>\n[\"") &&
		strings.HasSuffix(reply, "\"]\n</serp_queries> -->\n</final>\n") &&
		strings.Count(reply, "<phase ") == strings.Count(reply, "</phase>")
	return shape && thinkingml.Validate(reply, thinkingml.Options{}).Valid
}

// finalHasCJK reports whether the <final> part of a reply holds Chinese text.
func finalHasCJK(reply string) bool {
	_, final, _ := strings.Cut(reply, "<final>")
	return strings.IndexFunc(final, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0
}

func TestReplies(t *testing.T) {
	tests := []struct {
		name         string
		instructions string
		user         string
		wantChinese  bool
		wantQuote    string
	}{
		{name: "english", instructions: "You are a helpful assistant.", user: "Help me design a momentum strategy <fast> & cheap", wantQuote: "Help me design a momentum strategy &lt;fast&gt; &amp; cheap"},
		{name: "chinese user text", instructions: "You are a helpful assistant.", user: "帮我设计一个动量策略", wantChinese: true, wantQuote: "帮我设计一个动量策略"},
		{name: "chinese instructions", instructions: "你是一个助手。", user: "hello", wantChinese: true, wantQuote: "hello"},
		{name: "locale marker", instructions: "Session\nLocale: ZH\n", user: "hello", wantChinese: true, wantQuote: "hello"},
	}
	_, c := start(t, scripted.Options{Pace: -1})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := ask(t.Context(), c, tt.instructions, tt.user)
			if tr.err != nil || !tr.completed() {
				t.Fatalf("err = %v, completed = %v", tr.err, tr.completed())
			}
			first, last := tr.events[0], tr.events[len(tr.events)-1]
			if first.Kind != upstream.EventCreated || !strings.HasPrefix(first.ResponseID, "resp_") || !strings.HasPrefix(first.UpstreamRequestID, "req_") {
				t.Errorf("first event = %+v, want created with resp_ and req_ ids", first)
			}
			if last.ResponseID != first.ResponseID || last.Model != "scripted-test" {
				t.Errorf("completed = %+v, want the created id %s and the requested model", last, first.ResponseID)
			}
			if u := last.Usage; u == nil || u.InputTokens <= 0 || u.OutputTokens <= 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
				t.Errorf("usage = %+v", u)
			}
			if !wellFormed(tr.text) {
				t.Errorf("reply is not well-formed ThinkingML:\n%s", tr.text)
			}
			if finalHasCJK(tr.text) != tt.wantChinese {
				t.Errorf("Chinese = %v, want %v:\n%s", !tt.wantChinese, tt.wantChinese, tr.text)
			}
			if !strings.Contains(tr.text, tt.wantQuote) {
				t.Errorf("reply does not quote %q:\n%s", tt.wantQuote, tr.text)
			}
		})
	}
}

// rawEvent is the part of a stream event the wire tests read.
type rawEvent struct {
	Type        string `json:"type"`
	Seq         *int   `json:"sequence_number"`
	OutputIndex *int   `json:"output_index"`
	ItemID      string `json:"item_id"`
	Delta       string `json:"delta"`
	Arguments   string `json:"arguments"`
	Item        *struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Status    string          `json:"status"`
		Name      string          `json:"name"`
		Arguments *string         `json:"arguments"`
		Output    json.RawMessage `json:"output"`
		Error     json.RawMessage `json:"error"`
		Tools     []struct {
			Name string `json:"name"`
		} `json:"tools"`
	} `json:"item"`
	Response *struct {
		Output []struct {
			ID string `json:"id"`
		} `json:"output"`
	} `json:"response"`
}

// rawStream posts body to the scripted upstream and returns its events, failing the test
// unless each is framed as `event: TYPE` + `data: {"type":TYPE,…}` with sequence numbers
// 0, 1, 2, …
func rawStream(t *testing.T, run *scripted.Running, body string) []rawEvent {
	t.Helper()
	resp, err := http.Post(run.URL()+"/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	http.DefaultClient.CloseIdleConnections()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("Content-Type = %q, X-Request-Id = %q", ct, resp.Header.Get("X-Request-Id"))
	}
	var events []rawEvent
	for i, block := range strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(block, "\ndata: ")
		var ev rawEvent
		if !ok || json.Unmarshal([]byte(data), &ev) != nil || "event: "+ev.Type != name || ev.Seq == nil || *ev.Seq != i {
			t.Fatalf("event %d is malformed or out of sequence:\n%s", i, block)
		}
		events = append(events, ev)
	}
	return events
}

// typeRuns returns the event types with repeats in a row collapsed.
func typeRuns(events []rawEvent) []string {
	var types []string
	for _, ev := range events {
		if len(types) == 0 || types[len(types)-1] != ev.Type {
			types = append(types, ev.Type)
		}
	}
	return types
}

func TestWireFormat(t *testing.T) {
	run, _ := start(t, scripted.Options{Pace: -1})
	events := rawStream(t, run, `{"model":"m","stream":true,"input":"hi"}`)
	want := []string{
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed",
	}
	if got := typeRuns(events); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("event order\n got %v\nwant %v", got, want)
	}
}

// TestWireFormatMCP follows docs/upstreams.md: tool listing, a failed call,
// its retry, then the message, each item at its own output_index, all of them listed by
// response.completed.
func TestWireFormatMCP(t *testing.T) {
	run, _ := start(t, scripted.Options{Pace: -1, ChunkSize: 16})
	events := rawStream(t, run, `{"model":"m","stream":true,"input":"draft it [[scenario:strategy_draft]]"}`)
	call := func(ending string) []string {
		return []string{"response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call_arguments.delta",
			"response.mcp_call_arguments.done", ending, "response.output_item.done"}
	}
	want := slices.Concat(
		[]string{"response.created", "response.in_progress", "response.output_item.added", "response.mcp_list_tools.in_progress",
			"response.mcp_list_tools.completed", "response.output_item.done"},
		call("response.mcp_call.failed"), call("response.mcp_call.completed"),
		[]string{"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
			"response.content_part.done", "response.output_item.done", "response.completed"})
	if got := typeRuns(events); !slices.Equal(got, want) {
		t.Fatalf("event order\n got %v\nwant %v", got, want)
	}
	done := checkOutputIndexes(t, events)
	if len(done) != 4 {
		t.Fatalf("%d items done, want 4", len(done))
	}
	list, failed, retried := done[0].Item, done[1].Item, done[2].Item
	if list.Type != "mcp_list_tools" || len(list.Tools) == 0 {
		t.Errorf("item 0 = %+v, want the listed tools", list)
	}
	if failed.Status != "failed" || string(failed.Output) != "null" || !strings.Contains(string(failed.Error), `"type":"mcp_tool_execution_error","content":[{"type":"text","text":"`) {
		t.Errorf("failed item: status %q, output %s, error %s", failed.Status, failed.Output, failed.Error)
	}
	if retried.Status != "completed" || string(retried.Error) != "null" || *retried.Arguments != *failed.Arguments || retried.ID == failed.ID {
		t.Errorf("retry: status %q, error %s, arguments %s (failed: %s), ids %s %s", retried.Status, retried.Error, *retried.Arguments, *failed.Arguments, retried.ID, failed.ID)
	}
	if done[3].Item.Type != "message" {
		t.Errorf("item 3 is a %s, want the message", done[3].Item.Type)
	}
}

// checkOutputIndexes checks that every event of an item carries the item's output_index,
// that items come at 0, 1, 2, … one after the other, that a call's argument deltas add up
// to its arguments, and that response.completed lists the items in that order. It returns
// the output_item.done events.
func checkOutputIndexes(t *testing.T, events []rawEvent) []rawEvent {
	t.Helper()
	var (
		done []rawEvent
		ids  []string
		args strings.Builder
	)
	for _, ev := range events {
		if ev.Type == "response.output_item.added" {
			if ev.OutputIndex == nil || *ev.OutputIndex != len(ids) || ev.Item == nil || (ev.Item.Arguments != nil && *ev.Item.Arguments != "") {
				t.Fatalf("output_item.added at %v, want %d, with an empty skeleton: %+v", ev.OutputIndex, len(ids), ev.Item)
			}
			ids = append(ids, ev.Item.ID)
			args.Reset()
			continue
		}
		if ev.Type == "response.created" || ev.Type == "response.in_progress" || ev.Type == "response.completed" {
			continue
		}
		if ev.OutputIndex == nil || *ev.OutputIndex != len(ids)-1 || (ev.ItemID != "" && ev.ItemID != ids[len(ids)-1]) {
			t.Errorf("%s at output_index %v item %q, want %d %q", ev.Type, ev.OutputIndex, ev.ItemID, len(ids)-1, ids[len(ids)-1])
		}
		switch ev.Type {
		case "response.mcp_call_arguments.delta":
			args.WriteString(ev.Delta)
		case "response.mcp_call_arguments.done":
			if ev.Arguments != args.String() || !json.Valid([]byte(ev.Arguments)) {
				t.Errorf("arguments %q, deltas %q", ev.Arguments, args.String())
			}
		case "response.output_item.done":
			if ev.Item == nil || ev.Item.ID != ids[len(ids)-1] {
				t.Fatalf("output_item.done of another item: %+v", ev.Item)
			}
			done = append(done, ev)
		}
	}
	last := events[len(events)-1]
	var listed []string
	for _, o := range last.Response.Output {
		listed = append(listed, o.ID)
	}
	if !slices.Equal(listed, ids) {
		t.Errorf("response.completed lists %v, want %v", listed, ids)
	}
	return done
}

func TestFaults(t *testing.T) {
	_, c := start(t, scripted.Options{Pace: time.Millisecond})
	tests := []struct {
		name  string
		user  string
		check func(t *testing.T, tr turn)
		// timeout bounds the request; 0 means the test's own.
		timeout time.Duration
	}{
		{name: "slow first token default", user: "hi [[fault:slow_first_token]]", check: firstTokenAfter(2 * time.Second)},
		{name: "first token ms", user: "hi [[first_token_ms:300]]", check: firstTokenAfter(300 * time.Millisecond)},
		{name: "mid-stream error", user: "hi [[fault:mid_stream_error]]", check: func(t *testing.T, tr turn) {
			wantPartial(t, tr)
			var e *upstream.Error
			if !errors.As(tr.err, &e) || e.Kind != upstream.KindProvider || e.UpstreamCode != "server_error" {
				t.Errorf("err = %v, want provider_error [server_error]", tr.err)
			}
		}},
		{name: "HTTP 429", user: "hi [[fault:http_429]]", check: func(t *testing.T, tr turn) {
			var e *upstream.Error
			if !errors.As(tr.err, &e) || e.Kind != upstream.KindRateLimited || e.HTTPStatus != 429 || e.RetryAfter != time.Second || e.UpstreamCode != "rate_limit_exceeded" || e.Message == "" {
				t.Errorf("err = %#v, want rate_limited with Retry-After 1s", tr.err)
			}
		}},
		{name: "HTTP 500", user: "hi [[fault:http_500]]", check: func(t *testing.T, tr turn) {
			var e *upstream.Error
			if !errors.As(tr.err, &e) || e.Kind != upstream.KindUnavailable || e.HTTPStatus != 500 || e.UpstreamCode != "server_error" {
				t.Errorf("err = %v, want upstream_unavailable (HTTP 500)", tr.err)
			}
		}},
		{name: "stall", user: "hi [[fault:stall]]", timeout: 500 * time.Millisecond, check: func(t *testing.T, tr turn) {
			wantPartial(t, tr)
			if tr.err != context.DeadlineExceeded {
				t.Errorf("err = %v, want the request's deadline", tr.err)
			}
		}},
		{name: "abrupt close", user: "hi [[fault:abrupt_close]]", check: func(t *testing.T, tr turn) {
			wantPartial(t, tr)
			if !errors.Is(tr.err, upstream.ErrProvider) || !errors.Is(tr.err, io.ErrUnexpectedEOF) {
				t.Errorf("err = %v, want provider_error from a cut connection", tr.err)
			}
		}},
		{name: "broken xml", user: "hi [[fault:broken_xml]]", check: func(t *testing.T, tr turn) {
			if !tr.completed() || wellFormed(tr.text) {
				t.Errorf("completed = %v, well-formed = %v; want a complete but broken reply:\n%s", tr.completed(), wellFormed(tr.text), tr.text)
			}
		}},
		{name: "wrong language", user: "hi there [[fault:wrong_language]]", check: func(t *testing.T, tr turn) {
			if !tr.completed() || !wellFormed(tr.text) || !finalHasCJK(tr.text) {
				t.Fatalf("want a complete, valid Chinese reply to an English message:\n%s", tr.text)
			}
			if res := thinkingml.CheckLanguage(tr.text, "en"); res.OK {
				t.Errorf("the language check accepts it as English: %s", res.Reason)
			}
		}},
		{name: "pace ms", user: "hi [[pace_ms:60]]", check: func(t *testing.T, tr turn) {
			if !tr.completed() {
				t.Fatalf("err = %v", tr.err)
			}
			if least := time.Duration(tr.deltas-1) * 60 * time.Millisecond; time.Since(tr.first) < least {
				t.Errorf("%d deltas took %v, want at least %v", tr.deltas, time.Since(tr.first), least)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			tt.check(t, ask(ctx, c, "", tt.user))
		})
	}
}

// firstTokenAfter checks that the first delta came at least d after the request (the mock
// waits d after writing response.created, which follows the request; timing from the
// client's receipt of created would count that receipt's own delay against the mock) and
// that the reply then completed normally.
func firstTokenAfter(d time.Duration) func(t *testing.T, tr turn) {
	return func(t *testing.T, tr turn) {
		if !tr.completed() || !wellFormed(tr.text) {
			t.Fatalf("err = %v, completed = %v", tr.err, tr.completed())
		}
		if gap := tr.first.Sub(tr.sent); gap < d {
			t.Errorf("first delta %v after the request, want at least %v", gap, d)
		}
	}
}

// wantPartial checks that some text arrived before the stream failed.
func wantPartial(t *testing.T, tr turn) {
	t.Helper()
	if tr.deltas == 0 || tr.completed() || tr.err == nil {
		t.Errorf("deltas = %d, completed = %v, err = %v; want some text, then a failure", tr.deltas, tr.completed(), tr.err)
	}
}

func TestOnceFaults(t *testing.T) {
	_, c := start(t, scripted.Options{Pace: -1})
	tests := []struct {
		marker string
		bad    func(reply string) bool
	}{
		{marker: "[[fault:broken_xml_once]]", bad: func(r string) bool { return !wellFormed(r) }},
		{marker: "[[fault:wrong_language_once]]", bad: finalHasCJK},
	}
	for _, tt := range tests {
		t.Run(tt.marker, func(t *testing.T) {
			user := "plan a strategy " + tt.marker
			// The correction retry resends the same message with other instructions.
			for i, wantBad := range []bool{true, false, true} {
				tr := ask(t.Context(), c, "attempt "+string(rune('1'+i)), user)
				if !tr.completed() {
					t.Fatalf("request %d: err = %v", i+1, tr.err)
				}
				if got := tt.bad(tr.text); got != wantBad {
					t.Errorf("request %d: bad = %v, want %v:\n%s", i+1, got, wantBad, tr.text)
				}
			}
			// Another message has its own first time.
			if tr := ask(t.Context(), c, "", "something else "+tt.marker); !tt.bad(tr.text) {
				t.Errorf("a new message got the good reply first:\n%s", tr.text)
			}
		})
	}
}

func TestRequestsRecord(t *testing.T) {
	run, c := start(t, scripted.Options{Pace: -1})
	req := upstream.Request{Model: "m", Input: []upstream.InputItem{{Role: "user", Content: "recorded"}}, Headers: http.Header{"X-Mcp-Context": {"jwt"}}}
	for _, err := range c.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.Get(run.URL() + "/_scripted/requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	defer http.DefaultClient.CloseIdleConnections()
	var got struct {
		Requests []struct {
			Headers map[string][]string `json:"headers"`
			Body    struct {
				Model  string `json:"model"`
				Stream bool   `json:"stream"`
				Input  []struct {
					Content string `json:"content"`
				} `json:"input"`
			} `json:"body"`
		} `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if len(got.Requests) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(got.Requests))
	}
	r := got.Requests[0]
	if r.Body.Model != "m" || !r.Body.Stream || len(r.Body.Input) != 1 || r.Body.Input[0].Content != "recorded" || r.Headers["X-Mcp-Context"][0] != "jwt" {
		t.Errorf("recorded %+v", r)
	}

	// The record keeps the last 100.
	for i := range 120 {
		resp, err := http.Post(run.URL()+"/responses", "application/json", strings.NewReader(`{"n":`+strings.Repeat("1", 1+i%3)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if n := len(run.Server().Requests()); n != 100 {
		t.Errorf("kept %d requests, want 100", n)
	}
}

func TestCloseEndsOpenStreams(t *testing.T) {
	run, err := scripted.Listen(t.Context(), "", scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := upstream.New(upstream.Config{BaseURL: run.URL()})
	defer c.CloseIdleConnections()
	got := make(chan turn, 1)
	go func() { got <- ask(context.Background(), c, "", "hi [[fault:stall]]") }()
	time.Sleep(200 * time.Millisecond) // let the stream reach its stall
	start := time.Now()
	if err := run.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with a stalled stream open", d)
	}
	if tr := <-got; tr.completed() || tr.err == nil {
		t.Errorf("the stalled stream ended with completed = %v, err = %v", tr.completed(), tr.err)
	}
}

// syncBuffer collects log output written from handler goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestClientLeavingStopsTheStream(t *testing.T) {
	var logs syncBuffer
	_, c := start(t, scripted.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	req := upstream.Request{Input: []upstream.InputItem{{Role: "user", Content: "hi [[pace_ms:50]]"}}}
	deltas := 0
	for ev, err := range c.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == upstream.EventTextDelta {
			if deltas++; deltas == 2 {
				break
			}
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(logs.String(), "stream ended early") {
		if time.Now().After(deadline) {
			t.Fatalf("the server kept streaming after the client left; log:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRepliesWithoutTheirBlocks: no_genui and no_patch take the scenario's AGENT blocks out
// of its reply, one each, so the server's own cards and fills can be tested.
func TestRepliesWithoutTheirBlocks(t *testing.T) {
	_, c := start(t, scripted.Options{Pace: -1})
	state := "[SESSION STATE]\nphase: stress_test\nstage: scenario\nlocale: en\nartifacts: {\"scenario_set_id\":\"scn-1\"}\n[/SESSION STATE]"
	cases := []struct {
		name, marker      string
		wantUI, wantPatch bool
	}{
		{"as played", "", true, true},
		{"without GenUI", "[[fault:no_genui]]", false, true},
		{"without the patch", "[[fault:no_patch]]", true, false},
		{"without either", "[[fault:no_genui]] [[fault:no_patch]]", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := ask(t.Context(), c, state, "run them "+tc.marker)
			if !tr.completed() {
				t.Fatalf("err = %v", tr.err)
			}
			if got := strings.Contains(tr.text, "<AGENT_UI_JSON>"); got != tc.wantUI {
				t.Errorf("AGENT_UI_JSON present = %v, want %v", got, tc.wantUI)
			}
			if got := strings.Contains(tr.text, "<AGENT_STATE_PATCH>"); got != tc.wantPatch {
				t.Errorf("AGENT_STATE_PATCH present = %v, want %v", got, tc.wantPatch)
			}
		})
	}
}
