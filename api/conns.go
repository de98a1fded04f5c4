package api

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/internal/workgroup"
)

// ConnLimits are the limits on the connections a replica holds.
type ConnLimits struct {
	// Max caps the connections open at once, below the file limit, so a flood cannot take
	// the descriptors the database, the log and other clients need.
	Max int
	// PerClient is a client's share of Max (0: none): past it that client's own idle
	// connections yield first, then it is refused, and no one else is.
	PerClient int
	// IdleTimeout is how long an idle keep-alive connection is kept while the replica has
	// room; it shortens as the connections near Max (see idleLimit).
	IdleTimeout time.Duration
	// Health answers a health probe (GET /healthz, /readyz) that arrives when nothing can
	// make room, so a load balancer never takes a replica out for being flooded.
	Health func(path string) (status int, body []byte)
	// TrustedProxies are the peers whose requests name their client in X-Forwarded-For:
	// their connections are not held to a share, and each request moves its connection to
	// the client it names (see Handler).
	TrustedProxies []netip.Prefix
}

// A connection is a client's: its peer's address (behind a trusted proxy, the request's
// forwarded address, set by clientOf at each request). A client may hold PerClient
// connections. When a new one comes and there is no room, an idle keep-alive connection is
// closed to make it (its client's own oldest, when the client is at its share; else the
// oldest of all), and only when none is idle is the new one refused: idle connections
// cannot lock anyone out, and one client's work cannot take another's room. Closing an idle
// connection is what its idle timeout would do later; its client opens another.

// LimitConnections serves at most lim.Max connections from inner at once, under the rules
// above; past them a connection is answered 503 with Retry-After (or its health probe
// answered) and closed. A connection counts until it is closed, also while a detached event
// stream holds it. ConnState must be the http.Server's ConnState, for the tracker to know
// which connections are idle.
func LimitConnections(inner net.Listener, lim ConnLimits) *ConnTracker {
	t := &ConnTracker{Listener: inner, lim: lim, clients: map[string]*client{}, refusing: make(chan struct{}, maxRefusing),
		stop: make(chan struct{})}
	if t.lim.IdleTimeout <= 0 {
		t.lim.IdleTimeout = 2 * time.Minute
	}
	t.group.Go(t.sweep)
	return t
}

// ConnTracker is the listener LimitConnections returns.
type ConnTracker struct {
	net.Listener
	lim ConnLimits

	mu      sync.Mutex
	open    int
	idle    list.List // of *trackedConn, oldest idle first
	clients map[string]*client

	refusing chan struct{} // the refusals under way
	group    workgroup.Group
	stop     chan struct{}
}

// client is one client's connections: how many are open, and its idle ones, oldest first.
type client struct {
	open int
	idle list.List
}

// trackedConn is a connection the tracker counts.
type trackedConn struct {
	net.Conn
	t       *ConnTracker
	client  string
	proxied bool // the peer is a trusted proxy
	once    sync.Once

	// Guarded by t.mu.
	idleAt time.Time
	inIdle *list.Element // in t.idle while idle
	inOwn  *list.Element // in its client's idle list while idle
	closed bool
}

// Accept returns the next connection there is room for, making room by closing an idle
// one, and refusing on the way those it cannot make room for.
func (t *ConnTracker) Accept() (net.Conn, error) {
	for {
		c, err := t.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, proxied := t.peer(c.RemoteAddr())
		if tc, evict := t.admit(c, key, proxied); tc != nil {
			if evict != nil {
				_ = evict.Close() // its client opens another when it needs one
			}
			return tc, nil
		}
		t.refuse(c)
	}
}

// admit counts c for client key when there is room, or room to make: the connection to
// close for it (nil when none need be). nil when c must be refused.
func (t *ConnTracker) admit(c net.Conn, key string, proxied bool) (tc, evict *trackedConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cl := t.clients[key]
	if cl == nil {
		cl = &client{}
		t.clients[key] = cl
	}
	switch {
	case t.lim.PerClient > 0 && !proxied && cl.open >= t.lim.PerClient:
		if evict = oldest(&cl.idle); evict == nil {
			t.forget(key, cl)
			return nil, nil
		}
	case t.open >= t.lim.Max:
		if evict = oldest(&t.idle); evict == nil {
			t.forget(key, cl)
			return nil, nil
		}
	}
	if evict != nil {
		t.unidle(evict) // it leaves the lists now; its place frees when it closes
	}
	t.open++
	cl.open++
	return &trackedConn{Conn: c, t: t, client: key, proxied: proxied}, evict
}

// oldest is the first connection of an idle list, nil when the list is empty.
func oldest(l *list.List) *trackedConn {
	if e := l.Front(); e != nil {
		return e.Value.(*trackedConn)
	}
	return nil
}

// forget drops a client entry that holds nothing.
func (t *ConnTracker) forget(key string, cl *client) {
	if cl.open == 0 {
		delete(t.clients, key)
	}
}

// ConnState tracks which connections are idle; the http.Server calls it.
func (t *ConnTracker) ConnState(c net.Conn, state http.ConnState) {
	tc, ok := c.(*trackedConn)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc.closed {
		return
	}
	switch state {
	case http.StateIdle:
		if tc.inIdle == nil {
			tc.idleAt = time.Now()
			tc.inIdle = t.idle.PushBack(tc)
			tc.inOwn = t.clients[tc.client].idle.PushBack(tc)
		}
	default:
		t.unidle(tc)
	}
}

// unidle takes tc out of the idle lists (t.mu held).
func (t *ConnTracker) unidle(tc *trackedConn) {
	if tc.inIdle == nil {
		return
	}
	t.idle.Remove(tc.inIdle)
	t.clients[tc.client].idle.Remove(tc.inOwn)
	tc.inIdle, tc.inOwn = nil, nil
}

// Close releases the connection's place, once.
func (tc *trackedConn) Close() error {
	tc.once.Do(tc.t.release(tc))
	return tc.Conn.Close()
}

// release returns the function that gives tc's place back.
func (t *ConnTracker) release(tc *trackedConn) func() {
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.unidle(tc)
		tc.closed = true
		t.open--
		cl := t.clients[tc.client]
		cl.open--
		t.forget(tc.client, cl)
	}
}

// rekey moves tc to client key: behind a trusted proxy, the request names the client.
func (t *ConnTracker) rekey(tc *trackedConn, key string) {
	if tc.client == key {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc.closed {
		return
	}
	wasIdle := tc.inIdle != nil
	t.unidle(tc)
	old := t.clients[tc.client]
	old.open--
	t.forget(tc.client, old)
	cl := t.clients[key]
	if cl == nil {
		cl = &client{}
		t.clients[key] = cl
	}
	cl.open++
	tc.client = key
	if wasIdle {
		tc.inIdle = t.idle.PushBack(tc)
		tc.inOwn = cl.idle.PushBack(tc)
	}
}

// sweepEvery is how often idle connections past their limit are closed.
const sweepEvery = time.Second

// sweep closes, every sweepEvery, the idle connections older than idleLimit, until Close.
func (t *ConnTracker) sweep() {
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
		}
		for _, tc := range t.expired(time.Now()) {
			_ = tc.Close()
		}
	}
}

// expired takes the idle connections past the idle limit out of the lists.
func (t *ConnTracker) expired(now time.Time) []*trackedConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	limit := idleLimit(t.lim.IdleTimeout, t.open, t.lim.Max)
	var out []*trackedConn
	for tc := oldest(&t.idle); tc != nil && now.Sub(tc.idleAt) > limit; tc = oldest(&t.idle) {
		t.unidle(tc)
		out = append(out, tc)
	}
	return out
}

// idleLimit is how long a connection may sit idle with open of max connections open: the
// whole timeout while half the room is free, then less as the room fills, down to a tenth
// of it when full, so room frees before anyone must be turned away.
func idleLimit(timeout time.Duration, open, room int) time.Duration {
	if room <= 0 || open*2 <= room {
		return timeout
	}
	free := max(float64(room-open)/float64(room)*2, 0) // 1 at half full, 0 when full
	return timeout/10 + time.Duration(float64(timeout-timeout/10)*free)
}

// Close stops accepting and sweeping and waits for the refusals under way.
func (t *ConnTracker) Close() error {
	err := t.Listener.Close()
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	t.group.Close()
	t.group.Wait()
	return err
}

// Open reports the connections open now (for tests and metrics).
func (t *ConnTracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open
}

// peer is a connection's client, its peer's address without the port, and whether that
// peer is a trusted proxy.
func (t *ConnTracker) peer(a net.Addr) (string, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String(), false
	}
	addr := ap.Addr().Unmap()
	return addr.String(), t.trusted(addr)
}

func (t *ConnTracker) trusted(addr netip.Addr) bool {
	for _, p := range t.lim.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// connKey is the request context's key of its connection (ConnContext).
type connKey struct{}

// ConnContext keeps each connection in its requests' context, for Handler; the
// http.Server calls it.
func (t *ConnTracker) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// Handler moves the connection of each request a trusted proxy forwards to the client the
// request names: the last address of X-Forwarded-For that is not a trusted proxy's.
func (t *ConnTracker) Handler(next http.Handler) http.Handler {
	if len(t.lim.TrustedProxies) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tc, ok := r.Context().Value(connKey{}).(*trackedConn); ok && tc.proxied {
			if client := t.forwarded(r.Header.Values("X-Forwarded-For")); client != "" {
				t.rekey(tc, client)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// forwarded is the client an X-Forwarded-For chain names: its last address that is not a
// trusted proxy's ("" when there is none).
func (t *ConnTracker) forwarded(values []string) string {
	var hops []string
	for _, v := range values {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		addr, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return ""
		}
		if !t.trusted(addr.Unmap()) {
			return addr.Unmap().String()
		}
	}
	return ""
}
