package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"

	"github.com/phaseflow/phaseflow/api"
	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/userlimit"
)

// postTurn posts text into a new session and returns the status, the error code (if any),
// Retry-After and the message id.
func postTurn(t *testing.T, s *stack, text string) (int, string, string, string) {
	t.Helper()
	resp := s.do(t, http.MethodPost, "/api/v1/messages", `{"text":"`+text+`"}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body struct {
		MessageID string `json:"message_id"`
		Error     struct{ Code string }
	}
	_ = json.Unmarshal(b, &body)
	return resp.StatusCode, body.Error.Code, resp.Header.Get("Retry-After"), body.MessageID
}

// waitDone follows the message's events to the terminal event, by which time the turn has
// given its slots back (a GET of the message may show it finished a moment earlier).
func waitDone(t *testing.T, s *stack, id string) {
	t.Helper()
	resp := s.do(t, http.MethodGet, "/api/v1/messages/"+id+"/events", "")
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("follow %s: %d %v", id, resp.StatusCode, err)
	}
}

func TestPerUserTurnLimit(t *testing.T) {
	s := newStack(t, func(od *orchestration.Deps, _ *api.Deps) { od.UserTurns = userlimit.NewTurns(1) })
	defer s.close()
	status, _, _, first := postTurn(t, s, "hold my slot [[pace_ms:30]]")
	if status != http.StatusAccepted {
		t.Fatalf("first turn: %d", status)
	}
	status, code, retry, _ := postTurn(t, s, "me too")
	if status != http.StatusTooManyRequests || code != "too_many_turns" || retry != "5" {
		t.Fatalf("second turn of the same user: %d %q Retry-After %q, want 429 too_many_turns 5", status, code, retry)
	}
	waitDone(t, s, first)
	if status, _, _, id := postTurn(t, s, "now there is room"); status != http.StatusAccepted {
		t.Fatalf("after the first ended: %d (the user's slot was not given back)", status)
	} else {
		waitDone(t, s, id)
	}
}

func TestPerUserMessageRate(t *testing.T) {
	s := newStack(t, func(od *orchestration.Deps, ad *api.Deps) {
		ad.MessageRate = userlimit.NewRate(od.Store.(userlimit.RateStore), 6, 2, slog.New(slog.DiscardHandler))
	})
	defer s.close()
	for i := range 2 {
		status, _, _, id := postTurn(t, s, "quick")
		if status != http.StatusAccepted {
			t.Fatalf("message %d of the burst: %d", i+1, status)
		}
		waitDone(t, s, id)
	}
	status, code, retry, _ := postTurn(t, s, "one too many")
	n, _ := strconv.Atoi(retry)
	if status != http.StatusTooManyRequests || code != "too_many_messages" || n < 1 || n > 10 {
		t.Fatalf("third message: %d %q Retry-After %q, want 429 too_many_messages within 10s", status, code, retry)
	}
}
