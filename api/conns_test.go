package api

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// trackedServer serves a plain handler behind a tracker with lim, as the binary does.
func trackedServer(t *testing.T, lim ConnLimits) (*ConnTracker, string) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := LimitConnections(inner, lim)
	held := make(chan struct{})
	hs := &http.Server{Handler: tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" { // a request under way until the test ends: its connection is busy
			<-held
		}
		_, _ = io.WriteString(w, "ok")
	})), ConnState: tr.ConnState, ConnContext: tr.ConnContext}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(tr) }()
	t.Cleanup(func() {
		close(held)
		hs.Close()
		tr.Close()
		<-served
	})
	return tr, inner.Addr().String()
}

// kept is a keep-alive connection from a given local address.
type kept struct {
	c  net.Conn
	rd *bufio.Reader
}

func dialFrom(t *testing.T, addr, from string) *kept {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &kept{c: c, rd: bufio.NewReader(c)}
}

// get sends GET path on k and returns the status, 0 when the connection was closed.
func (k *kept) get(t *testing.T, path string, header ...string) int {
	t.Helper()
	_ = k.c.SetDeadline(time.Now().Add(5 * time.Second))
	req := "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + strings.Join(header, "") + "\r\n"
	if _, err := io.WriteString(k.c, req); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(k.rd, nil)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// settle waits for the tracker to count open connections, idle of them idle.
func settle(t *testing.T, tr *ConnTracker, open, idle int) {
	t.Helper()
	count := func() (int, int) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.open, tr.idle.Len()
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		o, i := count()
		if o == open && i == idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, %d idle; want %d, %d", o, i, open, idle)
		}
	}
}

// Idle keep-alive connections yield to new ones: the oldest idle is closed to make room.
func TestIdleConnectionsYield(t *testing.T) {
	tr, addr := trackedServer(t, ConnLimits{Max: 3})
	var idle []*kept
	for i := range 3 {
		k := dialFrom(t, addr, "127.0.0.1")
		if st := k.get(t, "/x"); st != 200 {
			t.Fatalf("GET = %d", st)
		}
		idle = append(idle, k)
		settle(t, tr, i+1, i+1) // idle in this order
	}
	other := dialFrom(t, addr, "127.0.0.2")
	if st := other.get(t, "/x"); st != 200 {
		t.Fatalf("a new client at the cap, with idle connections open, got %d", st)
	}
	if st := idle[0].get(t, "/x"); st != 0 {
		t.Errorf("the oldest idle connection still served (%d); it should have made room", st)
	}
	if st := idle[2].get(t, "/x"); st != 200 {
		t.Errorf("a newer idle connection was closed too (%d)", st)
	}
}

// At the cap with nothing idle a new connection is refused 503, and a health probe is
// answered as the health check says.
func TestAtTheCapNothingIdle(t *testing.T) {
	tr, addr := trackedServer(t, ConnLimits{Max: 2, Health: func(path string) (int, []byte) { return 200, []byte(`{"status":"ok"}`) }})
	for range 2 {
		k := dialFrom(t, addr, "127.0.0.1")
		_, _ = io.WriteString(k.c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n") // busy, not idle
	}
	settle(t, tr, 2, 0)
	refused := dialFrom(t, addr, "127.0.0.3")
	_, _ = io.WriteString(refused.c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(refused.rd, nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("past the cap: %v %v, want 503 with Retry-After", resp, err)
	}
	probe := dialFrom(t, addr, "127.0.0.3")
	if st := probe.get(t, "/healthz"); st != 200 {
		t.Errorf("a health probe at the cap got %d", st)
	}
}

// A client at its share makes room with its own idle connections, then is refused alone.
func TestAClientsShare(t *testing.T) {
	tr, addr := trackedServer(t, ConnLimits{Max: 10, PerClient: 2})
	a1, a2 := dialFrom(t, addr, "127.0.0.1"), dialFrom(t, addr, "127.0.0.1")
	a1.get(t, "/x")
	settle(t, tr, 2, 1) // idle in this order
	a2.get(t, "/x")
	settle(t, tr, 2, 2)
	a3 := dialFrom(t, addr, "127.0.0.1")
	if st := a3.get(t, "/x"); st != 200 {
		t.Fatalf("a client at its share with idle connections got %d", st)
	}
	if st := a1.get(t, "/x"); st != 0 {
		t.Errorf("the client's oldest idle connection still served (%d)", st)
	}
	// Now hold both of its connections busy: the next is refused, another client is not.
	_, _ = io.WriteString(a2.c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	_, _ = io.WriteString(a3.c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(50 * time.Millisecond)
	a4 := dialFrom(t, addr, "127.0.0.1")
	if st := a4.get(t, "/x"); st != http.StatusServiceUnavailable {
		t.Errorf("a client past its share with nothing idle got %d, want 503", st)
	}
	if st := dialFrom(t, addr, "127.0.0.2").get(t, "/x"); st != 200 {
		t.Errorf("another client was refused (%d)", st)
	}
}

// Behind a trusted proxy, the forwarded address is the client.
func TestForwardedClient(t *testing.T) {
	tr := &ConnTracker{lim: ConnLimits{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}}}
	cases := []struct {
		header []string
		want   string
	}{
		{[]string{"203.0.113.7"}, "203.0.113.7"},
		{[]string{"198.51.100.1, 203.0.113.7, 10.1.2.3"}, "203.0.113.7"},
		{[]string{"203.0.113.7", "10.0.0.9"}, "203.0.113.7"},
		{[]string{"10.0.0.1"}, ""},
		{[]string{"not an address"}, ""},
	}
	for _, tc := range cases {
		if got := tr.forwarded(tc.header); got != tc.want {
			t.Errorf("forwarded(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}

func TestIdleLimitShortensAsTheRoomFills(t *testing.T) {
	const timeout = 100 * time.Second
	cases := []struct {
		open, room int
		want       time.Duration
	}{
		{0, 100, timeout}, {50, 100, timeout}, {75, 100, 55 * time.Second}, {100, 100, 10 * time.Second}, {120, 100, 10 * time.Second},
	}
	for _, tc := range cases {
		if got := idleLimit(timeout, tc.open, tc.room); got != tc.want {
			t.Errorf("idleLimit(%d of %d) = %v, want %v", tc.open, tc.room, got, tc.want)
		}
	}
}
