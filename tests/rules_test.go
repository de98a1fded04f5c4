package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

type errorBody struct {
	Error struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		MessageID string `json:"message_id"`
	} `json:"error"`
}

func TestRequestRules(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		alice, mallory := s.token("alice"), s.token("mallory")
		sid := s.newSession(alice, "en")
		ctx := ctxFor(t, 60*time.Second)

		t.Run("no token is 401 with a JSON error", func(t *testing.T) {
			var e errorBody
			resp := s.call(ctx, http.MethodGet, "/api/v1/sessions", "", nil, &e)
			if resp.StatusCode != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
				t.Fatalf("got %d %+v", resp.StatusCode, e)
			}
		})
		t.Run("a stream token is not a bearer token", func(t *testing.T) {
			a := s.post(alice, sid, "hello")
			waitFinished(t, s, alice, a.MessageID)
			resp := s.call(ctx, http.MethodGet, "/api/v1/sessions", a.StreamToken, nil, nil)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("stream token as bearer: %d, want 401", resp.StatusCode)
			}
		})
		t.Run("another user's session is 404", func(t *testing.T) {
			var e errorBody
			resp := s.call(ctx, http.MethodGet, "/api/v1/sessions/"+sid, mallory, nil, &e)
			if resp.StatusCode != http.StatusNotFound || e.Error.Code != "not_found" {
				t.Fatalf("got %d %+v", resp.StatusCode, e)
			}
			resp = s.call(ctx, http.MethodPost, "/api/v1/sessions/"+sid+"/messages", mallory, map[string]string{"text": "hi"}, &e)
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("posting into another user's session: %d, want 404", resp.StatusCode)
			}
		})
		t.Run("empty text is 400", func(t *testing.T) {
			var e errorBody
			resp := s.call(ctx, http.MethodPost, "/api/v1/sessions/"+sid+"/messages", alice, map[string]string{"text": "  "}, &e)
			if resp.StatusCode != http.StatusBadRequest || e.Error.Code != "bad_request" {
				t.Fatalf("got %d %+v", resp.StatusCode, e)
			}
		})
		t.Run("a body over the limit is 413", func(t *testing.T) {
			var e errorBody
			big := map[string]string{"text": strings.Repeat("x", 2<<20)}
			resp := s.call(ctx, http.MethodPost, "/api/v1/messages", alice, big, &e)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Code != "body_too_large" {
				t.Fatalf("got %d %+v", resp.StatusCode, e)
			}
		})
		t.Run("a second generation in the session is 409 naming the running one", func(t *testing.T) {
			first := s.post(alice, sid, "long one [[pace_ms:30]]")
			var e errorBody
			resp := s.call(ctx, http.MethodPost, "/api/v1/sessions/"+sid+"/messages", alice, map[string]string{"text": "and another"}, &e)
			if resp.StatusCode != http.StatusConflict || e.Error.MessageID != first.MessageID {
				t.Fatalf("got %d %+v, want 409 naming %s", resp.StatusCode, e, first.MessageID)
			}
			waitFinished(t, s, alice, first.MessageID)
		})
		t.Run("a repeated client_request_id answers the first message", func(t *testing.T) {
			body := map[string]string{"text": "once only", "client_request_id": "dup-1"}
			var one, two turnAnswer
			s.call(ctx, http.MethodPost, "/api/v1/sessions/"+sid+"/messages", alice, body, &one)
			waitFinished(t, s, alice, one.MessageID)
			resp := s.call(ctx, http.MethodPost, "/api/v1/sessions/"+sid+"/messages", alice, body, &two)
			if resp.StatusCode != http.StatusAccepted || two.MessageID != one.MessageID {
				t.Fatalf("repeat answered %d %+v, want 202 with message %s", resp.StatusCode, two, one.MessageID)
			}
		})
		t.Run("a repeated client_request_id without a session answers the first message and its session", func(t *testing.T) {
			// A mobile client whose answer was lost posts again, then tries the session route.
			body := map[string]string{"text": "first words from the phone", "client_request_id": "phone-42"}
			before := len(allRecorded(t, s))
			var one, two, three turnAnswer
			if resp := s.call(ctx, http.MethodPost, "/api/v1/messages", alice, body, &one); resp.StatusCode != http.StatusAccepted {
				t.Fatalf("first post = %d", resp.StatusCode)
			}
			waitFinished(t, s, alice, one.MessageID)
			resp := s.call(ctx, http.MethodPost, "/api/v1/messages", alice, body, &two)
			if resp.StatusCode != http.StatusAccepted || two.MessageID != one.MessageID || two.SessionID != one.SessionID {
				t.Fatalf("repeat answered %d %+v, want message %s in session %s", resp.StatusCode, two, one.MessageID, one.SessionID)
			}
			s.call(ctx, http.MethodPost, "/api/v1/sessions/"+sid+"/messages", alice, body, &three)
			if three.MessageID != one.MessageID || three.SessionID != one.SessionID {
				t.Fatalf("the same id through the session route answered %+v, want message %s", three, one.MessageID)
			}
			if n := len(allRecorded(t, s)) - before; n != 1 {
				t.Fatalf("the upstream got %d requests for one client_request_id, want 1 generation", n)
			}
			var list struct {
				Sessions []struct {
					ID string `json:"id"`
				} `json:"sessions"`
			}
			s.call(ctx, http.MethodGet, "/api/v1/sessions?limit=200", alice, nil, &list)
			made := 0
			for _, x := range list.Sessions {
				var msgs struct {
					Messages []map[string]any `json:"messages"`
				}
				s.call(ctx, http.MethodGet, "/api/v1/sessions/"+x.ID+"/messages", alice, nil, &msgs)
				for _, m := range msgs.Messages {
					if m["content"] == body["text"] {
						made++
					}
				}
			}
			if made != 1 {
				t.Fatalf("the message is stored %d times, want once", made)
			}
		})
		t.Run("a new session is made when none is named", func(t *testing.T) {
			var a turnAnswer
			resp := s.call(ctx, http.MethodPost, "/api/v1/messages", alice, map[string]string{"text": "你好，帮我设计一个策略"}, &a, "Accept-Language", "zh-CN,zh;q=0.9")
			if resp.StatusCode != http.StatusAccepted || a.SessionID == "" || a.SessionID == sid {
				t.Fatalf("got %d %+v", resp.StatusCode, a)
			}
			var sess map[string]any
			s.call(ctx, http.MethodGet, "/api/v1/sessions/"+a.SessionID, alice, nil, &sess)
			if sess["locale"] != "zh" {
				t.Fatalf("locale from Accept-Language = %v, want zh", sess["locale"])
			}
			waitFinished(t, s, alice, a.MessageID)
		})
		t.Run("X-Request-Id is echoed", func(t *testing.T) {
			resp := s.call(ctx, http.MethodGet, "/healthz", "", nil, nil, "X-Request-Id", "probe-7")
			if resp.Header.Get("X-Request-Id") != "probe-7" {
				t.Fatalf("X-Request-Id = %q", resp.Header.Get("X-Request-Id"))
			}
		})
		t.Run("readiness checks the database", func(t *testing.T) {
			resp := s.call(ctx, http.MethodGet, "/readyz", "", nil, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("readyz = %d", resp.StatusCode)
			}
		})
	})
}

func TestDirectEventStreamFromThePost(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("dana")
		sid := s.newSession(tok, "en")
		req, err := http.NewRequestWithContext(ctxFor(t, 30*time.Second), http.MethodPost, s.base+"/api/v1/sessions/"+sid+"/messages", strings.NewReader(`{"text":"stream it back"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			t.Fatalf("direct stream answered %d %q", resp.StatusCode, ct)
		}
		if resp.Header.Get("X-Accel-Buffering") != "no" || !strings.Contains(resp.Header.Get("Cache-Control"), "no-transform") {
			t.Fatalf("proxy headers missing: %v", resp.Header)
		}
		st := &sseStream{resp: resp, rd: newReader(resp.Body)}
		evs := st.readAll(t)
		logs := logged(evs)
		if logs[0].Data["state"] != "queued" || logs[len(logs)-1].Name != "completed" || reply(evs) == "" {
			t.Fatalf("direct stream: %d events, last %s", len(logs), logs[len(logs)-1].Name)
		}
	})
}

// waitFinished polls the message until it is no longer pending or streaming.
func waitFinished(t *testing.T, s *server, token, messageID string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var msg map[string]any
		s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/messages/"+messageID, token, nil, &msg)
		if st := msg["status"]; st != "pending" && st != "streaming" {
			return msg
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("message %s did not finish within 30s", messageID)
	return nil
}

func TestOverCapacityIsRefusedFastWithRetryAfter(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t, "PHASEFLOW_MAX_TURNS=1")
		tok := s.token("olga")
		first := s.post(tok, s.newSession(tok, "en"), "hold the only slot [[pace_ms:40]]")
		var e errorBody
		resp := s.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/sessions/"+s.newSession(tok, "en")+"/messages", tok, map[string]string{"text": "me too"}, &e)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || e.Error.Code != "over_capacity" {
			t.Fatalf("second turn over the limit: %d Retry-After=%q %+v", resp.StatusCode, resp.Header.Get("Retry-After"), e)
		}
		waitFinished(t, s, tok, first.MessageID)
		s.post(tok, s.newSession(tok, "en"), "now there is room") // the slot was given back
	})
}
