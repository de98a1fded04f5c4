package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// idleConn is a keep-alive connection that sent one request and then sits idle.
type idleConn struct {
	c  net.Conn
	rd *bufio.Reader
}

// dialFrom opens a connection to s from a loopback source address.
func dialFrom(t *testing.T, s *server, from string) (net.Conn, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	return d.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
}

// getOn sends GET path on c (with token when set) and returns the answer's status, 0 when
// the connection is gone.
func getOn(c net.Conn, rd *bufio.Reader, path, token string) int {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", path, auth); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Idle keep-alive connections cannot lock a replica: 800 of them from one address, each
// after one request, against a cap of 768, leave room for other clients (from another
// address and from the same one) and for /healthz; with a per-client share the flood
// never even reaches the cap.
func TestIdleConnectionsCannotLockOut(t *testing.T) {
	for _, share := range []string{"0", "256"} {
		t.Run("share "+share, func(t *testing.T) {
			s := startServer(t, "PHASEFLOW_MAX_CONNECTIONS=768", "PHASEFLOW_MAX_CONNECTIONS_PER_CLIENT="+share)
			var flood []idleConn
			defer func() {
				for _, k := range flood {
					k.c.Close()
				}
			}()
			for i := range 800 {
				c, err := dialFrom(t, s, "127.0.0.1")
				if err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
				k := idleConn{c: c, rd: bufio.NewReader(c)}
				flood = append(flood, k)
				if st := getOn(k.c, k.rd, "/healthz", ""); st != http.StatusOK {
					t.Fatalf("flood connection %d got %d", i, st)
				}
			}
			tok := s.token("bystander")
			for _, from := range []string{"127.0.0.2", "127.0.0.1"} {
				for _, path := range []string{"/healthz", "/readyz", "/api/v1/sessions"} {
					c, err := dialFrom(t, s, from)
					if err != nil {
						t.Fatal(err)
					}
					if st := getOn(c, bufio.NewReader(c), path, tok); st != http.StatusOK {
						t.Errorf("GET %s from %s after the flood: %d", path, from, st)
					}
					c.Close()
				}
			}
			b := s.post(tok, s.newSession(tok, "en"), "Draft a BTC momentum strategy")
			if logs := logged(s.follow(b)); logs[len(logs)-1].Name != "completed" {
				t.Errorf("another client's turn ended with %v", logs[len(logs)-1])
			}
		})
	}
}

// One user's streams over keep-alive connections, refused past the per-user cap, close
// their connections: a thousand of them leave other users' turns, /healthz and new
// connections alone on a replica capped at 768.
func TestRefusedStreamsCloseTheirConnections(t *testing.T) {
	s := startServer(t, "PHASEFLOW_MAX_STREAMS_PER_USER=32", "PHASEFLOW_MAX_CONNECTIONS=768")
	tok := s.token("flood")
	a := s.post(tok, s.newSession(tok, "en"), "Draft a BTC momentum strategy [[fault:stall]]")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}}
	var mu sync.Mutex
	var held []*http.Response
	closed, refused := 0, 0
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	for range 1000 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			req, _ := http.NewRequestWithContext(ctxFor(t, 30*time.Second), http.MethodGet, s.base+"/api/v1/messages/"+a.MessageID+"/events", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if resp.StatusCode == http.StatusOK {
				held = append(held, resp)
				return
			}
			refused++
			if resp.Close {
				closed++
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	defer closeAll(held)
	if len(held) != 32 || refused != 1000-32 || closed != refused {
		t.Fatalf("1,000 kept-alive streams of one user: %d held, %d refused, %d of them closing their connection", len(held), refused, closed)
	}
	other := s.token("bystander")
	b := s.post(other, s.newSession(other, "en"), "Draft a BTC momentum strategy")
	if logs := logged(s.follow(b)); logs[len(logs)-1].Name != "completed" {
		t.Fatalf("another user's turn ended with %v", logs[len(logs)-1])
	}
	if resp := s.call(ctxFor(t, 5*time.Second), http.MethodGet, "/healthz", "", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz = %d", resp.StatusCode)
	}
}

// The skills' routes take the largest input a skill accepts: a 1 MiB terminal snapshot of
// escape sequences (six bytes each in JSON) is run by the default configuration.
func TestAnEscapeHeavySnapshotRuns(t *testing.T) {
	s := startServer(t)
	tok := s.token("watcher")
	for name, unit := range map[string]string{"colour codes": "\x1b[31mx\x1b[0m\n", "nothing but escapes": "\x1b"} {
		t.Run(name, func(t *testing.T) {
			snap := strings.Repeat(unit, ((1<<20)-64)/len(unit)) // with the question below: just under 1 MiB
			body, err := json.Marshal(map[string]any{"input": map[string]string{"terminal": snap + "\n⏺ Which one?\n❯ "}})
			if err != nil {
				t.Fatal(err)
			}
			if len(body) <= 1<<20 {
				t.Fatalf("the body is %d bytes: not past the general limit", len(body))
			}
			var run struct{ Status string }
			resp := s.call(ctxFor(t, 60*time.Second), http.MethodPost, "/api/v1/skills/terminal_state/runs", tok, json.RawMessage(body), &run)
			if resp.StatusCode != http.StatusOK || run.Status != "succeeded" {
				t.Errorf("a %d-byte body of a 1 MiB snapshot: %d, run %q", len(body), resp.StatusCode, run.Status)
			}
		})
	}
}
