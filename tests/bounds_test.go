package tests

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestATurnPastItsLimitsEnds: a model that keeps sending ends its turn with reply_too_large
// once the turn's events pass PHASEFLOW_MAX_TURN_EVENTS or its reply passes
// PHASEFLOW_MAX_REPLY_BYTES, the text so far kept in the stream and the message.
func TestATurnPastItsLimitsEnds(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t, "PHASEFLOW_MAX_TURN_EVENTS=3000", "PHASEFLOW_MAX_REPLY_BYTES=8192")
		tok := s.token("flooder")
		for _, tc := range []struct{ name, flood string }{
			{"events", "[[flood:20000]]"}, // 3,000 one-byte deltas come before 8 KiB
		} {
			t.Run(tc.name, func(t *testing.T) {
				a := s.post(tok, s.newSession(tok, "en"), "Draft a BTC momentum strategy "+tc.flood)
				evs := s.follow(a)
				logs := checkStream(t, evs, 1, a.MessageID, a.RequestID)
				last := logs[len(logs)-1]
				if last.Name != "error" || last.Data["code"] != "reply_too_large" {
					t.Fatalf("last event = %s %v, want error reply_too_large", last.Name, last.Data)
				}
				if len(logs) > 3000+10 {
					t.Fatalf("%d events for a turn capped at 3000", len(logs))
				}
				text := reply(evs)
				msg := waitFinished(t, s, tok, a.MessageID)
				if text == "" || msg["content"] != text || msg["status"] != "failed" {
					t.Fatalf("message %v with %d bytes of content, the stream had %d: want the partial text kept", msg["status"], len(fmt.Sprint(msg["content"])), len(text))
				}
			})
		}
		// A reply over the byte limit, in fewer events than the event limit.
		s2 := startServer(t, "PHASEFLOW_MAX_REPLY_BYTES=4096")
		tok2 := s2.token("long")
		a := s2.post(tok2, s2.newSession(tok2, "en"), "Draft a BTC momentum strategy [[flood:10000]]")
		logs := logged(s2.follow(a))
		if last := logs[len(logs)-1]; last.Name != "error" || last.Data["code"] != "reply_too_large" {
			t.Fatalf("last event = %s %v, want error reply_too_large", last.Name, last.Data)
		}
	})
}

// TestValidateRefusesAReplyPastTheLimit: /validate checks at most what a turn accepts and
// answers a reply over it with 413 reply_too_large; the adversarial shapes under it (tens
// of thousands of unclosed tags, popped at once) are answered with a bounded report.
func TestValidateRefusesAReplyPastTheLimit(t *testing.T) {
	s := startServer(t, "PHASEFLOW_MAX_REPLY_BYTES=200000")
	tok := s.token("checker")
	validate := func(body string) (*http.Response, map[string]any) {
		var out map[string]any
		resp := s.call(ctxFor(t, 60*time.Second), http.MethodPost, "/api/v1/validate", tok, map[string]string{"reply": body}, &out)
		return resp, out
	}
	resp, out := validate("<thinking>" + strings.Repeat("<phase>", 30000) + "</thinking><final>x</final>")
	if e, _ := out["error"].(map[string]any); resp.StatusCode != http.StatusRequestEntityTooLarge || e["code"] != "reply_too_large" {
		t.Fatalf("a 210 KB reply over a 200 KB limit: %d %v, want 413 reply_too_large", resp.StatusCode, out)
	}
	resp, out = validate("<thinking>" + strings.Repeat("<phase><title>", 10000) + strings.Repeat("</phase>", 10000))
	if errs, _ := out["errors"].([]any); resp.StatusCode != http.StatusOK || len(errs) == 0 || len(errs) > 100 {
		t.Fatalf("mismatched tags: %d with %d errors, want 200 with a bounded report", resp.StatusCode, len(errs))
	}
}

// TestALongTurnKeepsMemoryFlat streams a million one-byte deltas through one turn (limits
// raised for it) while the process's resident memory is sampled: it must not grow with
// the reply's length, and what the turn used is given back once it ends.
func TestALongTurnKeepsMemoryFlat(t *testing.T) {
	s := startServerOn(t, plainBinary(t), func(string) []string {
		return []string{"PHASEFLOW_MAX_TURN_EVENTS=2000000", "PHASEFLOW_MAX_REPLY_BYTES=4194304", "PHASEFLOW_REPLY_POLICY=report",
			"PHASEFLOW_TURN_TIMEOUT=10m", "PHASEFLOW_IDLE_TIMEOUT=5m"}
	})
	tok := s.token("marathon")
	sid := s.newSession(tok, "en")
	s.follow(s.post(tok, sid, "Draft a BTC momentum strategy [[flood:20000]]")) // warm up
	base := rss(t, s)
	a := s.post(tok, sid, "Draft a BTC momentum strategy [[flood:1000000]]")
	peak, samples := base, 0
	deadline := time.Now().Add(8 * time.Minute)
	for {
		var msg map[string]any
		s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/messages/"+a.MessageID, tok, nil, &msg)
		peak, samples = max(peak, rss(t, s)), samples+1
		if msg["status"] == "completed" || msg["status"] == "failed" {
			if got := len(fmt.Sprint(msg["content"])); got < 1000000 {
				t.Fatalf("the message kept %d bytes of a 1,000,000-delta reply (%v)", got, msg["status"])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not end within 8 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The reply itself is a few MiB held as text; a million events held in memory were
	// hundreds.
	const allowance = 96 << 20
	if peak-base > allowance {
		t.Fatalf("resident memory grew by %d MiB over %d samples while one turn streamed, want under %d MiB", (peak-base)>>20, samples, allowance>>20)
	}
	after := rss(t, s)
	for end := time.Now().Add(30 * time.Second); after-base > allowance/2 && time.Now().Before(end); after = rss(t, s) {
		time.Sleep(500 * time.Millisecond)
	}
	if after-base > allowance/2 {
		t.Fatalf("resident memory stayed %d MiB above where it started after the turn ended", (after-base)>>20)
	}
	t.Logf("resident memory: %d MiB before, %d MiB at the peak, %d MiB after (%d samples)", base>>20, peak>>20, after>>20, samples)
}

// rss is the server process's resident memory in bytes, as the kernel counts it.
func rss(t *testing.T, s *server) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.proc.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read the server's memory: %v", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/PID/status")
	return 0
}
