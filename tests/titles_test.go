package tests

import (
	"net/http"
	"testing"
	"time"
)

// sessionTitle reads a session's title through the API.
func sessionTitle(t *testing.T, s *server, tok, sid string) string {
	t.Helper()
	var sess struct {
		Title string `json:"title"`
	}
	if code := apiGet(t, s, tok, "/api/v1/sessions/"+sid, &sess); code != http.StatusOK {
		t.Fatalf("GET session = %d", code)
	}
	return sess.Title
}

// TestSessionTitles: a session created without a title is named after its first completed
// turn, after the strategy when the turn drafted one, else by a short form of the user's
// message in the session's locale; a title the user gave is never overwritten.
func TestSessionTitles(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("xena")
		ctx := ctxFor(t, 60*time.Second)

		t.Run("named after the strategy the first turn drafted", func(t *testing.T) {
			var a turnAnswer
			s.call(ctx, http.MethodPost, "/api/v1/messages", tok, map[string]string{"text": "Draft a BTC momentum strategy", "locale": "en"}, &a)
			if got := sessionTitle(t, s, tok, a.SessionID); got != "" {
				t.Fatalf("title before the first turn completed = %q, want none yet", got)
			}
			evs := s.follow(a)
			logs := logged(evs)
			meta, _ := logs[len(logs)-1].Data["metadata"].(map[string]any)
			if got := sessionTitle(t, s, tok, a.SessionID); got != "BTC momentum" || meta["session_title"] != got {
				t.Fatalf("title %q, completed.metadata.session_title %v; want the strategy's name, BTC momentum", got, meta["session_title"])
			}
		})

		t.Run("a short form of the first message in zh", func(t *testing.T) {
			var sess struct {
				ID string `json:"id"`
			}
			s.call(ctx, http.MethodPost, "/api/v1/sessions", tok, map[string]string{"locale": "zh"}, &sess)
			text := "以后这个策略要怎么上线，先模拟交易还是直接实盘？[[scenario:genui_not_allowed]]"
			waitFinished(t, s, tok, s.post(tok, sess.ID, text).MessageID)
			if got, want := sessionTitle(t, s, tok, sess.ID), "以后这个策略要怎么上线，先模拟交…"; got != want {
				t.Fatalf("title %q, want %q (16 characters of the message)", got, want)
			}
		})

		t.Run("a title the user gave is kept", func(t *testing.T) {
			sid := s.newSession(tok, "en") // titled "e2e"
			waitFinished(t, s, tok, s.post(tok, sid, "Draft a BTC momentum strategy").MessageID)
			if got := sessionTitle(t, s, tok, sid); got != "e2e" {
				t.Fatalf("title %q, want the user's e2e", got)
			}
		})
	})
}
