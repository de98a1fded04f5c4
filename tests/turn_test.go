package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// turnAnswer is the 202 body of a message-creating call.
type turnAnswer struct {
	MessageID   string `json:"message_id"`
	RequestID   string `json:"request_id"`
	SessionID   string `json:"session_id"`
	EventsURL   string `json:"events_url"`
	StreamToken string `json:"stream_token"`
}

// eventsURL is the events URL with the stream token, as a browser's EventSource uses it.
func (a turnAnswer) eventsURL() string { return a.EventsURL + "?stream_token=" + a.StreamToken }

func (s *server) newSession(token, locale string) string {
	s.t.Helper()
	var sess struct {
		ID     string `json:"id"`
		Phase  string `json:"phase"`
		Locale string `json:"locale"`
	}
	resp := s.call(ctxFor(s.t, 10*time.Second), http.MethodPost, "/api/v1/sessions", token, map[string]string{"title": "e2e", "locale": locale}, &sess)
	if resp.StatusCode != http.StatusCreated || sess.ID == "" || sess.Phase != "strategy" {
		s.t.Fatalf("create session: %d %+v", resp.StatusCode, sess)
	}
	return sess.ID
}

func (s *server) post(token, sessionID, text string, headers ...string) turnAnswer {
	s.t.Helper()
	var a turnAnswer
	resp := s.call(ctxFor(s.t, 10*time.Second), http.MethodPost, "/api/v1/sessions/"+sessionID+"/messages", token, map[string]string{"text": text}, &a, headers...)
	if resp.StatusCode != http.StatusAccepted || a.MessageID == "" {
		s.t.Fatalf("post message: %d %+v", resp.StatusCode, a)
	}
	return a
}

// checkStream asserts the framing rules every stream obeys and returns the logged events.
func checkStream(t *testing.T, evs []sseEvent, from int64, messageID, requestID string) []sseEvent {
	t.Helper()
	if len(evs) == 0 || evs[0].Retry != 2000 {
		t.Fatalf("first frame is not retry: 2000: %+v", evs)
	}
	logs := logged(evs)
	for i, ev := range logs {
		if ev.ID != from+int64(i) {
			t.Fatalf("event %d has id %d, want %d (gap or duplicate)", i, ev.ID, from+int64(i))
		}
	}
	for _, ev := range evs[1:] {
		if ev.Data["message_id"] != messageID || ev.Data["request_id"] != requestID {
			t.Fatalf("%s event lacks the message and request ids: %v", ev.Name, ev.Data)
		}
	}
	return logs
}

func TestTurnStreamsValidReplyAndPersistsIt(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("alice")
		sid := s.newSession(tok, "en")
		a := s.post(tok, sid, "Draft a momentum strategy for BTC", "X-Request-Id", "req-e2e-1")
		if a.RequestID != "req-e2e-1" {
			t.Fatalf("request_id = %q, want the X-Request-Id sent", a.RequestID)
		}
		evs := s.openEvents(ctxFor(t, 30*time.Second), a.eventsURL(), 0).readAll(t)
		logs := checkStream(t, evs, 1, a.MessageID, "req-e2e-1")

		var states []string
		seq := 0.0
		for _, ev := range logs {
			switch ev.Name {
			case "status":
				states = append(states, ev.Data["state"].(string))
			case "content_delta":
				seq++
				if ev.Data["seq"] != seq {
					t.Fatalf("content_delta seq %v, want %v", ev.Data["seq"], seq)
				}
			}
		}
		if got := strings.Join(states, ","); !strings.HasPrefix(got, "queued,working,routed") ||
			strings.Trim(strings.ReplaceAll(strings.TrimPrefix(got, "queued,working,routed"), "tool_call", ""), ",") != "" {
			t.Fatalf("status states = %s, want queued,working,routed then only tool_call", got)
		}
		last := logs[len(logs)-1]
		if last.Name != "completed" {
			t.Fatalf("last event = %s %v, want completed", last.Name, last.Data)
		}
		text := reply(evs)
		if got := int(last.Data["reply_len"].(float64)); got != utf8.RuneCountInString(text) {
			t.Fatalf("reply_len %d, assembled %d code points", got, utf8.RuneCountInString(text))
		}
		if res := thinkingml.Validate(text, thinkingml.Options{}); !res.Valid {
			t.Fatalf("assembled reply is not valid ThinkingML: %+v\n%s", res.Errors, text)
		}
		meta := last.Data["metadata"].(map[string]any)
		usage, _ := meta["usage"].(map[string]any)
		if usage == nil || usage["total_tokens"].(float64) <= 0 {
			t.Fatalf("completed.metadata.usage missing: %v", meta)
		}
		if v, _ := meta["validation"].(map[string]any); v == nil || v["valid"] != true {
			t.Fatalf("completed.metadata.validation = %v, want valid", meta["validation"])
		}
		if !strings.Contains(text, "momentum") {
			t.Fatalf("reply does not mention the user's text: %s", text)
		}

		var msg map[string]any
		s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/messages/"+a.MessageID, tok, nil, &msg)
		if msg["status"] != "completed" || msg["content"] != text || msg["role"] != "assistant" {
			t.Fatalf("persisted message = %v, want completed with the streamed text", msg)
		}
		if msg["last_event_id"].(float64) != float64(last.ID) || msg["usage"] == nil || msg["request_id"] != "req-e2e-1" {
			t.Fatalf("persisted message lacks last_event_id/usage/request_id: %v", msg)
		}
		var list struct {
			Messages []map[string]any `json:"messages"`
		}
		s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/sessions/"+sid+"/messages", tok, nil, &list)
		if len(list.Messages) != 2 || list.Messages[0]["role"] != "user" || list.Messages[0]["content"] != "Draft a momentum strategy for BTC" {
			t.Fatalf("session messages = %v, want the user message then the reply", list.Messages)
		}
	})
}

func TestReconnectWithLastEventIDHasNoGapAndNoDuplicate(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("bob")
		sid := s.newSession(tok, "en")
		a := s.post(tok, sid, "slow please [[pace_ms:40]]")
		ctx := ctxFor(t, 60*time.Second)

		first := s.openEvents(ctx, a.eventsURL(), 0)
		var seen []sseEvent
		for len(logged(seen)) < 6 {
			ev, err := first.next()
			if err != nil {
				t.Fatalf("first connection: %v", err)
			}
			seen = append(seen, ev)
		}
		first.close() // the connection drops mid-stream
		lastID := logged(seen)[len(logged(seen))-1].ID

		rest := s.openEvents(ctx, a.eventsURL(), lastID).readAll(t)
		logs := checkStream(t, rest, lastID+1, a.MessageID, a.RequestID)
		if logs[len(logs)-1].Name != "completed" {
			t.Fatalf("resumed stream did not end with completed: %v", logs[len(logs)-1])
		}
		all := append(seen, rest[1:]...)
		text := reply(all)
		var msg map[string]any
		s.call(ctx, http.MethodGet, "/api/v1/messages/"+a.MessageID, tok, nil, &msg)
		if msg["content"] != text {
			t.Fatalf("text assembled across the reconnect differs from the persisted reply:\n%q\n%q", text, msg["content"])
		}

		// A reconnect at the terminal event tells EventSource to stop.
		end := s.openEvents(ctx, a.eventsURL(), logs[len(logs)-1].ID)
		defer end.close()
		if end.resp.StatusCode != http.StatusNoContent {
			t.Fatalf("reconnect after the end = %d, want 204", end.resp.StatusCode)
		}
		// A reconnect from the start after the end replays the whole log from the database.
		replay := s.openEvents(ctx, a.eventsURL(), 0).readAll(t)
		if reply(replay) != text {
			t.Fatal("a full replay after the end differs from the live stream")
		}
	})
}

func TestGenerationOutlivesItsClientsAndTwoClientsCanFollow(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("carol")
		sid := s.newSession(tok, "en")
		a := s.post(tok, sid, "keep going without me [[pace_ms:30]]")
		ctx := ctxFor(t, 60*time.Second)

		leaver := s.openEvents(ctx, a.eventsURL(), 0)
		if _, err := leaver.next(); err != nil {
			t.Fatal(err)
		}
		leaver.close()

		results := make(chan []sseEvent, 2)
		for range 2 {
			st := s.openEvents(ctx, a.eventsURL(), 0)
			go func() {
				defer st.close()
				var evs []sseEvent
				for {
					ev, err := st.next()
					if err != nil {
						results <- evs
						return
					}
					evs = append(evs, ev)
				}
			}()
		}
		one, two := <-results, <-results
		if reply(one) == "" || reply(one) != reply(two) || len(logged(one)) != len(logged(two)) {
			t.Fatalf("two followers saw different streams: %d vs %d events", len(logged(one)), len(logged(two)))
		}
		var msg map[string]any
		s.call(ctx, http.MethodGet, "/api/v1/messages/"+a.MessageID, tok, nil, &msg)
		if msg["status"] != "completed" {
			t.Fatalf("message status = %v after its first client left, want completed", msg["status"])
		}
	})
}
