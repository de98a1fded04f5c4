package tests

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/mcpcontext"
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
	resp, out = validate("<thinking>" + strings.Repeat("<phase><title>", 6000) + strings.Repeat("</phase>", 6000))
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

// TestOneUserCannotTakeTheConnections: one token opening 5,000 event streams holds its 32
// and is refused the rest at once with 429 too_many_streams, while /healthz and another
// user's turn go on as usual; past the replica's connection cap a new connection gets 503
// with Retry-After, and the place is free again once streams close.
func TestOneUserCannotTakeTheConnections(t *testing.T) {
	s := startServer(t, "PHASEFLOW_IDLE_TIMEOUT=5m", "PHASEFLOW_MAX_STREAMS_PER_USER=32")
	tok := s.token("flood")
	a := s.post(tok, s.newSession(tok, "en"), "Draft a BTC momentum strategy [[fault:stall]]")
	held, codes := openStreams(t, s, tok, a.MessageID, 5000, 100)
	defer closeAll(held)
	if len(held) != 32 || codes[http.StatusTooManyRequests] != 5000-32 {
		t.Fatalf("5,000 streams of one user: %d held, answers %v; want 32 held and the rest 429", len(held), codes)
	}
	if resp := s.call(ctxFor(t, 5*time.Second), http.MethodGet, "/healthz", "", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz = %d while one user floods", resp.StatusCode)
	}
	other := s.token("bystander")
	b := s.post(other, s.newSession(other, "en"), "Draft a BTC momentum strategy")
	if logs := logged(s.follow(b)); logs[len(logs)-1].Name != "completed" {
		t.Fatalf("another user's turn ended with %v", logs[len(logs)-1])
	}

	capped := startServer(t, "PHASEFLOW_IDLE_TIMEOUT=5m", "PHASEFLOW_MAX_STREAMS_PER_USER=0", "PHASEFLOW_MAX_CONNECTIONS=40")
	tok = capped.token("many")
	a = capped.post(tok, capped.newSession(tok, "en"), "Draft a BTC momentum strategy [[fault:stall]]")
	held, codes = openStreams(t, capped, tok, a.MessageID, 60, 1)
	if len(held) > 40 || codes[http.StatusServiceUnavailable] < 20 {
		t.Fatalf("60 streams against a cap of 40 connections: %d held, answers %v; want the rest 503", len(held), codes)
	}
	closeAll(held)
	ok := false
	for end := time.Now().Add(5 * time.Second); !ok && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		ok = capped.call(ctxFor(t, 5*time.Second), http.MethodGet, "/healthz", "", nil, nil).StatusCode == http.StatusOK
	}
	if !ok {
		t.Fatal("/healthz still refused after the streams closed")
	}
}

// openStreams opens n event streams of messageID with token, parallel at a time, on
// connections of their own, and returns those the server holds open and the count of every
// other answer by status (each with its Retry-After checked).
func openStreams(t *testing.T, s *server, token, messageID string, n, parallel int) ([]*http.Response, map[int]int) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var mu sync.Mutex
	var held []*http.Response
	codes := map[int]int{}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			req, err := http.NewRequestWithContext(ctxFor(t, 30*time.Second), http.MethodGet, s.base+"/api/v1/messages/"+messageID+"/events", nil)
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := client.Do(req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				codes[-1]++
			case resp.StatusCode == http.StatusOK:
				held = append(held, resp)
			default:
				codes[resp.StatusCode]++
				if resp.Header.Get("Retry-After") == "" {
					t.Errorf("a %d without Retry-After", resp.StatusCode)
				}
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return held, codes
}

func closeAll(resps []*http.Response) {
	for _, r := range resps {
		r.Body.Close()
	}
}

// TestARefusedPostUsesUpNoMessage: posts refused because the user's turn still runs do not
// use up the user's message allowance.
func TestARefusedPostUsesUpNoMessage(t *testing.T) {
	s := startServer(t, "PHASEFLOW_MAX_TURNS_PER_USER=1", "PHASEFLOW_USER_MESSAGE_BURST=2", "PHASEFLOW_USER_MESSAGE_RATE=1",
		"PHASEFLOW_IDLE_TIMEOUT=5m")
	tok := s.token("eager")
	sid := s.newSession(tok, "en")
	running := s.post(tok, sid, "Draft a BTC momentum strategy [[fault:stall]]") // the first of two
	postCode := func() (int, string) {
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		resp := s.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/sessions/"+sid+"/messages", tok, map[string]string{"text": "again"}, &e)
		return resp.StatusCode, e.Error.Code
	}
	for range 5 {
		if status, code := postCode(); status != http.StatusTooManyRequests || code != "too_many_turns" {
			t.Fatalf("a post while the turn runs: %d %s, want 429 too_many_turns", status, code)
		}
	}
	if resp := s.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/messages/"+running.MessageID+"/cancel", tok, nil, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel = %d", resp.StatusCode)
	}
	waitFinished(t, s, tok, running.MessageID)
	if status, code := postCode(); status != http.StatusAccepted {
		t.Fatalf("the second message of a burst of two, after five refused posts: %d %s, want 202", status, code)
	}
}

// TestPerUserLimitsHoldAcrossReplicas: two replicas on one database give a user the limits
// one gives: a turn running on A takes the user's one slot on B too, and the message rate
// is one allowance wherever the user posts.
func TestPerUserLimitsHoldAcrossReplicas(t *testing.T) {
	a := startServer(t, "PHASEFLOW_MAX_TURNS_PER_USER=1", "PHASEFLOW_USER_MESSAGE_BURST=3", "PHASEFLOW_USER_MESSAGE_RATE=1",
		"PHASEFLOW_IDLE_TIMEOUT=5m")
	env := append(append([]string{}, a.env...), "PHASEFLOW_DATA_DIR="+t.TempDir())
	p, addr := start(t, "phaseflow listening on ", env, "serve")
	b := &server{t: t, base: addr, proc: p, mockURL: a.mockURL, dsn: a.dsn, env: env, auth: a.auth, bin: a.bin}
	tok := a.token("roamer")
	post := func(s *server, sid, text string) (int, string, string) {
		var out struct {
			MessageID string                `json:"message_id"`
			Error     struct{ Code string } `json:"error"`
		}
		resp := s.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/sessions/"+sid+"/messages", tok, map[string]string{"text": text}, &out)
		return resp.StatusCode, out.Error.Code, out.MessageID
	}
	running := a.post(tok, a.newSession(tok, "en"), "Draft a BTC momentum strategy [[fault:stall]]") // message 1, on A
	if status, code, _ := post(b, b.newSession(tok, "en"), "and on B"); status != http.StatusTooManyRequests || code != "too_many_turns" {
		t.Fatalf("a second turn on B while one runs on A: %d %s, want 429 too_many_turns", status, code)
	}
	if resp := a.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/messages/"+running.MessageID+"/cancel", tok, nil, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("cancel = %d", resp.StatusCode)
	}
	waitFinished(t, a, tok, running.MessageID)
	sid := b.newSession(tok, "en")
	for i, s := range []*server{b, a} { // messages 2 and 3 of a burst of 3
		status, code, id := post(s, sid, "hello")
		if status != http.StatusAccepted {
			t.Fatalf("message %d: %d %s", i+2, status, code)
		}
		waitFinished(t, s, tok, id)
	}
	if status, code, _ := post(b, sid, "one too many"); status != http.StatusTooManyRequests || code != "too_many_messages" {
		t.Fatalf("a fourth message across two replicas with a burst of three: %d %s, want 429 too_many_messages", status, code)
	}
}

// TestAProviderDownAtStartIsTrustedWhenBack: a server started while its identity
// provider's JWK Set answers 503 accepts the provider's RS256 tokens within seconds of the
// provider coming back (the library's own refresh waited an hour), and a request meanwhile
// is refused at once rather than held.
func TestAProviderDownAtStartIsTrustedWhenBack(t *testing.T) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := mcpcontext.JWKSDocument([]mcpcontext.PublicKey{{Key: &rk.PublicKey, KID: "back-rsa", Alg: "RS256"}})
	if err != nil {
		t.Fatal(err)
	}
	var up atomic.Bool
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(doc)
	}))
	defer idp.Close()
	s := startServer(t, "PHASEFLOW_JWT_JWKS_URL="+idp.URL)
	now := time.Now()
	tok := mintJWT(t, jwt.SigningMethodRS256, rk, &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "returning",
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}}, map[string]any{"kid": "back-rsa"})
	start := time.Now()
	if resp := s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/sessions", tok, nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a provider token while the provider is down: %d, want 401", resp.StatusCode)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the request waited %v on a provider that is down", took)
	}
	up.Store(true)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp := s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/sessions", tok, nil, nil)
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("15 s after the provider came back its token is still %d", resp.StatusCode)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
