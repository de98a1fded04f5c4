package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/phaseflow/phaseflow/internal/langtest"
)

// lastEvent follows a turn to its end and returns all frames.
func (s *server) follow(a turnAnswer) []sseEvent {
	s.t.Helper()
	return s.openEvents(ctxFor(s.t, 60*time.Second), a.eventsURL(), 0).readAll(s.t)
}

func TestUpstreamFailuresEndTheTurnWithTheirCode(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		// One attempt: with the router's retries, a wait for the 429's Retry-After (1s) would
		// race the 1s idle limit this test needs for the stall.
		s := startServer(t, "PHASEFLOW_IDLE_TIMEOUT=1s", "PHASEFLOW_UPSTREAM_MAX_ATTEMPTS=1")
		tok := s.token("erin")
		cases := []struct {
			name, marker, code, status string
			partial                    bool
		}{
			{"rate limited before the stream", "[[fault:http_429]]", "rate_limited", "failed", false},
			{"server error before the stream", "[[fault:http_500]]", "upstream_unavailable", "failed", false},
			{"error event mid-stream", "[[fault:mid_stream_error]]", "provider_error", "failed", true},
			{"connection closed without a terminal event", "[[fault:abrupt_close]]", "provider_error", "failed", true},
			{"upstream stalls past the idle limit", "[[fault:stall]]", "upstream_timeout", "failed", true},
			{"a reply broken on both attempts", "[[fault:broken_xml]]", "reply_invalid", "failed", true},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				sid := s.newSession(tok, "en")
				a := s.post(tok, sid, "please fail "+tc.marker)
				defer func() { failsInChinese(t, s, tok, tc.marker, tc.code) }()
				evs := s.follow(a)
				logs := checkStream(t, evs, 1, a.MessageID, a.RequestID)
				last := logs[len(logs)-1]
				if last.Name != "error" || last.Data["code"] != tc.code {
					t.Fatalf("last event = %s %v, want error %s", last.Name, last.Data, tc.code)
				}
				if last.Data["message"] == "" || last.Data["error"] != last.Data["message"] {
					t.Fatalf("error event must carry message and the same legacy error text: %v", last.Data)
				}
				text := reply(evs)
				if tc.partial != (text != "") {
					t.Fatalf("partial text %q, want partial=%v", text, tc.partial)
				}
				msg := waitFinished(t, s, tok, a.MessageID)
				if msg["status"] != tc.status || msg["content"] != text {
					t.Fatalf("persisted %v / %q, want status %s keeping the partial text", msg["status"], msg["content"], tc.status)
				}
				if e, _ := msg["error"].(map[string]any); e == nil || e["code"] != tc.code {
					t.Fatalf("persisted error = %v, want code %s", msg["error"], tc.code)
				}
			})
		}
	})
}

func TestCancelStopsTheGenerationAndKeepsThePartialText(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("frank")
		sid := s.newSession(tok, "en")
		a := s.post(tok, sid, "a long answer please [[pace_ms:50]]")
		st := s.openEvents(ctxFor(t, 60*time.Second), a.eventsURL(), 0)
		evs := readDeltas(t, st, 3)
		resp := s.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/messages/"+a.MessageID+"/cancel", tok, nil, nil)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancel = %d, want 202", resp.StatusCode)
		}
		evs = append(evs, st.readAll(t)...)
		logs := logged(evs)
		last := logs[len(logs)-1]
		if last.Name != "error" || last.Data["code"] != "cancelled" {
			t.Fatalf("last event = %s %v, want error cancelled", last.Name, last.Data)
		}
		msg := waitFinished(t, s, tok, a.MessageID)
		if msg["status"] != "cancelled" || msg["content"] == "" || msg["content"] != reply(evs) {
			t.Fatalf("persisted %v %q, want cancelled with the partial text %q", msg["status"], msg["content"], reply(evs))
		}
		// The session is free again.
		b := s.post(tok, sid, "next")
		waitFinished(t, s, tok, b.MessageID)
	})
}

// A turn that outlives PHASEFLOW_TURN_TIMEOUT ends with upstream_timeout, its partial
// text kept, however slowly its upstream still streams.
func TestTheTurnTimeoutEndsASlowTurn(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t, "PHASEFLOW_TURN_TIMEOUT=1500ms")
		tok := s.token("tim")
		a := s.post(tok, s.newSession(tok, "en"), "a slow answer [[scenario:default]] [[pace_ms:400]]")
		started := time.Now()
		evs := s.follow(a)
		took := time.Since(started)
		logs := logged(evs)
		last := logs[len(logs)-1]
		if last.Name != "error" || last.Data["code"] != "upstream_timeout" {
			t.Fatalf("last event = %s %v, want error upstream_timeout", last.Name, last.Data)
		}
		if took > 10*time.Second {
			t.Fatalf("the turn ended %v after it began, want about its 1.5 s limit", took)
		}
		msg := waitFinished(t, s, tok, a.MessageID)
		if msg["status"] != "failed" || msg["content"] == "" || msg["content"] != reply(evs) {
			t.Fatalf("persisted %v %q, want failed with the partial text %q", msg["status"], msg["content"], reply(evs))
		}
	})
}

func TestHeartbeatsFlowWhileWaitingForTheFirstToken(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("gina")
		sid := s.newSession(tok, "en")
		a := s.post(tok, sid, "think first [[first_token_ms:1200]]")
		evs := s.follow(a)
		var beats int
		firstDelta := -1
		for i, ev := range evs {
			if ev.Name == "heartbeat" {
				if ev.ID != 0 {
					t.Fatalf("heartbeat carries id %d; heartbeats must not move Last-Event-ID", ev.ID)
				}
				if ev.Data["ts"] == nil || ev.Data["last_event_id"] == nil || ev.Data["message_id"] != a.MessageID {
					t.Fatalf("heartbeat data = %v", ev.Data)
				}
				if firstDelta < 0 {
					beats++
				}
			}
			if ev.Name == "content_delta" && firstDelta < 0 {
				firstDelta = i
			}
		}
		if beats < 2 {
			t.Fatalf("%d heartbeats before the first token (1.2 s at 200 ms), want several", beats)
		}
	})
}

func TestShutdownInterruptsTurnsPastTheGracePeriod(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t, "PHASEFLOW_SHUTDOWN_GRACE=300ms")
		tok := s.token("hank")
		sid := s.newSession(tok, "en")
		a := s.post(tok, sid, "very slow [[pace_ms:200]]")
		st := s.openEvents(ctxFor(t, 60*time.Second), a.eventsURL(), 0)
		var evs []sseEvent
		for len(logged(evs)) < 5 {
			ev, err := st.next()
			if err != nil {
				t.Fatal(err)
			}
			evs = append(evs, ev)
		}
		s.proc.stop(t)
		evs = append(evs, st.readAll(t)...)
		logs := logged(evs)
		last := logs[len(logs)-1]
		if last.Name != "error" || last.Data["code"] != "interrupted" {
			t.Fatalf("last event before shutdown = %s %v, want error interrupted", last.Name, last.Data)
		}
		if s.proc.err != nil {
			t.Fatalf("server exit after SIGTERM: %v, want status 0\n%s", s.proc.err, s.proc.stderr.String())
		}
	})
}

// TestShutdownWithTheBuiltInUpstream: SIGTERM with the built-in scripted upstream (what a
// bare "phaseflow serve" runs) lets a running turn finish within the grace, as it does
// with an external upstream: the built-in upstream outlives the turns it serves.
func TestShutdownWithTheBuiltInUpstream(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t, "PHASEFLOW_UPSTREAM_URL=", "PHASEFLOW_SHUTDOWN_GRACE=20s")
		tok := s.token("hal")
		a := s.post(tok, s.newSession(tok, "en"), "A plain reply [[scenario:default]] [[pace_ms:40]]")
		st := s.openEvents(ctxFor(t, 60*time.Second), a.eventsURL(), 0)
		evs := readDeltas(t, st, 3)
		s.proc.stop(t)
		logs := logged(append(evs, st.readAll(t)...))
		if last := logs[len(logs)-1]; last.Name != "completed" {
			t.Fatalf("the turn running at SIGTERM ended %s %v, want completed within the grace", last.Name, last.Data)
		}
		if s.proc.err != nil {
			t.Fatalf("server exit after SIGTERM: %v, want status 0\n%s", s.proc.err, s.proc.stderr.String())
		}
	})
}

func TestAGenerationLostWithItsServerEndsInterrupted(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("pia")
		sid := s.newSession(tok, "en")
		a := s.post(tok, sid, "long answer [[pace_ms:100]]")
		st := s.openEvents(ctxFor(t, 30*time.Second), a.eventsURL(), 0)
		seen := readDeltas(t, st, 3)
		st.close()
		s.crashAndRestart() // what the client saw is committed: only committed events are sent

		lastID := logged(seen)[len(logged(seen))-1].ID
		rest := s.openEvents(ctxFor(t, 30*time.Second), a.eventsURL(), lastID).readAll(t)
		logs := logged(rest)
		if len(logs) == 0 || logs[len(logs)-1].Name != "error" || logs[len(logs)-1].Data["code"] != "interrupted" {
			t.Fatalf("after the crash the stream resumed with %v, want it to end with error interrupted", logs)
		}
		msg := waitFinished(t, s, tok, a.MessageID)
		if msg["status"] != "interrupted" || msg["content"] == "" || msg["content"] != reply(append(seen, rest[1:]...)) {
			t.Fatalf("persisted %v %q, want interrupted keeping the partial text", msg["status"], msg["content"])
		}
		checkFallback(t, logs[len(logs)-1], msg, msg["content"].(string), "en")
		// The session is usable again.
		b := s.post(tok, sid, "again")
		waitFinished(t, s, tok, b.MessageID)
	})
}

// readDeltas reads frames until n content deltas arrived and returns every frame read.
func readDeltas(t *testing.T, st *sseStream, n int) []sseEvent {
	t.Helper()
	var evs []sseEvent
	for deltas := 0; deltas < n; {
		ev, err := st.next()
		if err != nil {
			t.Fatalf("after %d deltas: %v", deltas, err)
		}
		if ev.Name == "content_delta" {
			deltas++
		}
		evs = append(evs, ev)
	}
	return evs
}

// failsInChinese fails a zh session's turn with marker and checks that what its client
// reads is Chinese: the error event's message (and the stored one) and the fallback reply
// beside a broken-off text hold no English sentence.
func failsInChinese(t *testing.T, s *server, tok, marker, code string) {
	t.Helper()
	if t.Failed() {
		return
	}
	sid := s.newSession(tok, "zh")
	a := s.post(tok, sid, "请失败一次 "+marker)
	logs := logged(s.follow(a))
	last := logs[len(logs)-1]
	if last.Name != "error" || last.Data["code"] != code {
		t.Fatalf("zh: last event = %s %v, want error %s", last.Name, last.Data, code)
	}
	msg, _ := last.Data["message"].(string)
	fallback, _ := last.Data["fallback"].(string)
	stored, _ := waitFinished(t, s, tok, a.MessageID)["error"].(map[string]any)
	for what, text := range map[string]string{"error.message": msg, "the fallback reply": fallback, "the stored error": fmt.Sprint(stored["message"])} {
		if runs := langtest.EnglishRuns(text); len(runs) > 0 {
			t.Errorf("zh: %s holds English: %q", what, runs)
		}
	}
	if !strings.ContainsFunc(msg, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
		t.Errorf("zh: error.message %q is not Chinese", msg)
	}
}
