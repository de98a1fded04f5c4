package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/store"
)

// chaosLeaseTTL is the replicas' lease in the chaos test: short, so a dead replica's turns
// end quickly; the bound below is the lease plus one sweep (a third of it) plus slack for
// a loaded CI machine.
const (
	chaosLeaseTTL   = 2 * time.Second
	chaosEndBound   = chaosLeaseTTL + chaosLeaseTTL/3 + 3*time.Second
	chaosOutage     = 3 * time.Second
	chaosSlowReply  = "chaos reply [[scenario:default]] [[pace_ms:150]]"
	chaosTurnsPerRS = 2
)

// chaos is a cluster under test: a throwaway PostgreSQL, the scripted upstream and several
// replicas of the real binary on one database, followed by clients that reconnect to any
// live replica the way a load balancer would send them.
type chaos struct {
	t        *testing.T
	pg       *pgCluster
	env      []string
	auth     *auth.Authority
	token    string
	st       *store.Store // the test's own view of the database
	followed []*follower
	counts   map[string]int
	slowest  time.Duration // the longest a killed replica's turn took to end

	mu       sync.Mutex // replicas is read by follower goroutines
	replicas []*server  // nil once killed
}

// replica returns replica i, nil when it is dead or gone.
func (c *chaos) replica(i int) *server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= len(c.replicas) {
		return nil
	}
	return c.replicas[i]
}

// live returns the live replicas, in order.
func (c *chaos) live() []*server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*server
	for _, r := range c.replicas {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

func newChaos(t *testing.T) *chaos {
	pg := newPGCluster(t)
	dsn := pg.createDatabase("chaos")
	_, mockURL := start(t, "PHASEFLOW_UPSTREAM_URL=", nil, "mock-upstream", "--addr", "127.0.0.1:0")
	c := &chaos{t: t, pg: pg, auth: auth.New([]byte(testSecret), "", ""), counts: map[string]int{}}
	c.env = []string{
		"PHASEFLOW_ADDR=127.0.0.1:0",
		"PHASEFLOW_DATABASE_URL=" + dsn,
		"PHASEFLOW_JWT_SECRET=" + testSecret,
		"PHASEFLOW_UPSTREAM_URL=" + mockURL,
		"PHASEFLOW_HEARTBEAT_INTERVAL=200ms",
		"PHASEFLOW_SHUTDOWN_GRACE=5s",
		"PHASEFLOW_LEASE_TTL=" + chaosLeaseTTL.String(),
		"PHASEFLOW_DB_OUTAGE_GRACE=30s",
	}
	tok, err := c.auth.Sign("chaos", auth.RoleUser, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.token = tok
	c.addReplica()
	c.addReplica()
	st, err := store.Open(context.Background(), dsn, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c.st = st
	return c
}

// addReplica starts one more replica and returns its index.
func (c *chaos) addReplica() int {
	env := append(append([]string{}, c.env...), "PHASEFLOW_DATA_DIR="+c.t.TempDir())
	p, addr := start(c.t, "phaseflow listening on ", env, "serve")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replicas = append(c.replicas, &server{t: c.t, base: addr, proc: p, env: env, auth: c.auth})
	return len(c.replicas) - 1
}

// kill ends replica i with SIGKILL, as a lost machine would.
func (c *chaos) kill(i int) {
	r := c.replica(i)
	_ = r.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-r.proc.done
	c.mu.Lock()
	c.replicas[i] = nil
	c.mu.Unlock()
}

// stopReplica stops replica i with SIGTERM and takes it out.
func (c *chaos) stopReplica(i int) {
	c.replica(i).proc.stop(c.t)
	c.mu.Lock()
	c.replicas[i] = nil
	c.mu.Unlock()
}

// turn starts a slow turn on replica i in a new session and follows it.
func (c *chaos) turn(i int) *follower {
	r := c.replica(i)
	a := r.post(c.token, r.newSession(c.token, "en"), chaosSlowReply)
	f := c.follow(a, i)
	f.replica = i
	return f
}

// follower is one client following one message, reconnecting with Last-Event-ID to the
// next live replica whenever its connection ends before the terminal event.
type follower struct {
	answer     turnAnswer
	replica    int // where the turn was started (its owner)
	mu         sync.Mutex
	events     []rawEvent
	terminalAt time.Time
	reconnects int
	done       chan struct{}
}

// rawEvent is one logged event exactly as received: id, name and the data bytes.
type rawEvent struct {
	ID   int64
	Name string
	Data string
}

func (c *chaos) follow(a turnAnswer, first int) *follower {
	f := &follower{answer: a, done: make(chan struct{})}
	c.followed = append(c.followed, f)
	go func() {
		defer close(f.done)
		deadline := time.Now().Add(60 * time.Second)
		for attempt := 0; time.Now().Before(deadline); attempt++ {
			live := c.live()
			if len(live) == 0 {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			r := c.replica(first) // the first connection goes where the turn started
			if attempt > 0 || r == nil {
				r = live[attempt%len(live)] // reconnects go wherever the balancer sends them
			}
			if f.readFrom(r.base, c.token) {
				return
			}
			f.reconnects++
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return f
}

// readFrom reads the message's events from one replica and reports whether the stream
// reached its end (terminal event, or 204 for a position at or past it).
func (f *follower) readFrom(base, token string) bool {
	req, _ := http.NewRequest(http.MethodGet, base+f.answer.EventsURL, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if last := f.lastID(); last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return true
	}
	if resp.StatusCode != http.StatusOK {
		return false
	}
	return f.read(bufio.NewReader(resp.Body))
}

// read parses frames until the terminal event (true) or the connection ends (false).
func (f *follower) read(rd *bufio.Reader) bool {
	var ev rawEvent
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return false // a half-received frame is dropped, as EventSource does
		}
		line = strings.TrimRight(line, "\n")
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "":
			if ev.ID > 0 && f.add(ev) {
				return true
			}
			ev = rawEvent{}
		case field == "id":
			ev.ID, _ = strconv.ParseInt(value, 10, 64)
		case field == "event":
			ev.Name = value
		case field == "data":
			ev.Data = value
		}
	}
}

// add records a logged event and reports whether it was the terminal one.
func (f *follower) add(ev rawEvent) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	if ev.Name == "completed" || ev.Name == "error" {
		f.terminalAt = time.Now()
		return true
	}
	return false
}

func (f *follower) lastID() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) == 0 {
		return 0
	}
	return f.events[len(f.events)-1].ID
}

func (f *follower) deltas() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, ev := range f.events {
		if ev.Name == "content_delta" {
			n++
		}
	}
	return n
}

// outcome is the terminal event's name and, for an error, its code.
func (f *follower) outcome() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) == 0 {
		return "nothing"
	}
	last := f.events[len(f.events)-1]
	if last.Name == "error" {
		if i := strings.Index(last.Data, `"code":"`); i >= 0 {
			code, _, _ := strings.Cut(last.Data[i+len(`"code":"`):], `"`)
			return "error " + code
		}
	}
	return last.Name
}

// streaming waits until every follower has received a few deltas: the turns are mid-reply.
func (c *chaos) streaming(fs ...*follower) {
	c.t.Helper()
	for _, f := range fs {
		if !waitUntil(20*time.Second, func() bool { return f.deltas() >= 3 }) {
			c.t.Fatalf("message %s: no deltas after 20s", f.answer.MessageID)
		}
	}
}

// finished waits for every follower to end and checks that each ended as want says.
func (c *chaos) finished(want string, fs ...*follower) {
	c.t.Helper()
	for _, f := range fs {
		select {
		case <-f.done:
		case <-time.After(70 * time.Second):
			c.t.Fatalf("message %s: follower still running", f.answer.MessageID)
		}
		if got := f.outcome(); got != want {
			c.t.Errorf("message %s (started on replica %d) ended %q, want %q", f.answer.MessageID, f.replica, got, want)
		}
		c.counts[want]++
	}
}

// parity checks every followed message against the stored log: what the client received
// live is exactly the log (same ids, same bytes, no gap), and the log has exactly one
// terminal event, last, matching the message row.
func (c *chaos) parity() {
	c.t.Helper()
	for _, f := range c.followed {
		<-f.done
		stored, err := c.st.ListEvents(context.Background(), f.answer.MessageID, 0, 0)
		if err != nil {
			c.t.Fatal(err)
		}
		f.mu.Lock()
		got := append([]rawEvent(nil), f.events...)
		f.mu.Unlock()
		if len(got) != len(stored) {
			c.t.Errorf("message %s: client received %d events, the log has %d", f.answer.MessageID, len(got), len(stored))
			continue
		}
		for i, ev := range stored {
			want := rawEvent{ID: ev.Seq, Name: ev.Name, Data: string(ev.Data)}
			if got[i] != want || ev.Seq != int64(i+1) {
				c.t.Errorf("message %s event %d: received %+v, stored %+v", f.answer.MessageID, i+1, got[i], want)
				break
			}
		}
		c.oneTerminal(f.answer.MessageID, stored)
		c.counts["events"] += len(stored)
	}
	c.counts["messages"] += len(c.followed)
	c.followed = nil
}

// oneTerminal checks that exactly the last stored event is terminal and the row agrees.
func (c *chaos) oneTerminal(id string, stored []store.Event) {
	c.t.Helper()
	for i, ev := range stored {
		terminal := ev.Name == "completed" || ev.Name == "error"
		if terminal != (i == len(stored)-1) {
			c.t.Errorf("message %s: event %d (%s) breaks the one-terminal-event rule", id, ev.Seq, ev.Name)
		}
	}
	m, err := c.st.GetMessage(context.Background(), id, "chaos")
	if err != nil {
		c.t.Fatal(err)
	}
	if m.Status == store.StatusPending || m.Status == store.StatusStreaming || m.LastEventID != int64(len(stored)) {
		c.t.Errorf("message %s: row status %s last_event_id %d after a log of %d events", id, m.Status, m.LastEventID, len(stored))
	}
}

// sessionsAcceptMessages posts a quick follow-up in each session through replica i: no 409
// may remain from a dead turn.
func (c *chaos) sessionsAcceptMessages(i int, fs ...*follower) {
	c.t.Helper()
	r := c.replica(i)
	var next []*follower
	for _, f := range fs {
		a := r.post(c.token, f.answer.SessionID, "follow-up [[scenario:default]]")
		next = append(next, c.follow(a, i))
	}
	c.finished("completed", next...)
}

func TestChaosTwoReplicas(t *testing.T) {
	c := newChaos(t)

	// The scenarios run in order on one cluster, in the test itself (not subtests): the
	// replicas and followers outlive each scenario.
	t.Log("scenario: a replica killed mid-turn")
	{
		var onA, onB []*follower
		for range chaosTurnsPerRS {
			onA, onB = append(onA, c.turn(0)), append(onB, c.turn(1))
		}
		c.streaming(append(onA, onB...)...)
		killed := time.Now()
		c.kill(0)
		c.finished("error interrupted", onA...)
		c.finished("completed", onB...)
		for _, f := range onA {
			took := f.terminalAt.Sub(killed)
			c.slowest = max(c.slowest, took)
			if took > chaosEndBound {
				t.Errorf("message %s ended %v after its replica died, want within %v", f.answer.MessageID, took, chaosEndBound)
			}
		}
		c.parity()
		c.sessionsAcceptMessages(1, onA...)
		c.parity()
		c.mu.Lock()
		c.replicas = c.replicas[1:] // the dead replica's place is taken by a fresh one
		c.mu.Unlock()
		c.addReplica()
	}

	t.Log("scenario: a third replica starts mid-turn")
	{
		var fs []*follower
		for range chaosTurnsPerRS {
			fs = append(fs, c.turn(0), c.turn(1))
		}
		c.streaming(fs...)
		third := c.addReplica()
		c.finished("completed", fs...)
		c.parity()
		c.stopReplica(third)
		c.mu.Lock()
		c.replicas = c.replicas[:third]
		c.mu.Unlock()
	}

	t.Logf("scenario: the database stops for %v mid-turn", chaosOutage)
	{
		var fs []*follower
		for range chaosTurnsPerRS {
			fs = append(fs, c.turn(0), c.turn(1))
		}
		c.streaming(fs...)
		c.pg.stop("fast")
		stopped := time.Now()
		c.checkUnavailable()
		time.Sleep(chaosOutage - time.Since(stopped))
		c.pg.start()
		c.finished("completed", fs...)
		c.parity()
		c.sessionsAcceptMessages(0, fs...)
		c.parity()
	}

	t.Log("scenario: a cancel reaches the replica running the turn")
	{
		f := c.turn(0)
		c.streaming(f)
		other := c.replica(1)
		resp := other.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/messages/"+f.answer.MessageID+"/cancel", c.token, nil, nil)
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancel through the other replica: %d", resp.StatusCode)
		}
		c.finished("error cancelled", f)
		resp = other.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/messages/"+f.answer.MessageID+"/cancel", c.token, nil, nil)
		if resp.StatusCode != http.StatusConflict {
			t.Errorf("cancel of a finished message: %d, want 409", resp.StatusCode)
		}
		c.parity()
	}

	summary := fmt.Sprintf("chaos: %d messages, %d events, client streams equal the stored log; %d killed turns ended interrupted (slowest %v after SIGKILL), %d completed, %d cancelled; %v database outage waited out",
		c.counts["messages"], c.counts["events"], c.counts["error interrupted"], c.slowest.Round(time.Millisecond),
		c.counts["completed"], c.counts["error cancelled"], chaosOutage)
	t.Log(summary)
	if path := os.Getenv("PHASEFLOW_CHAOS_SUMMARY"); path != "" {
		_ = os.WriteFile(path, []byte(summary+"\n"), 0o644)
	}
}

// checkUnavailable checks what clients get while the database is down: 503s with
// Retry-After and code database_unavailable, never 500, and /readyz 503.
func (c *chaos) checkUnavailable() {
	c.t.Helper()
	for _, r := range c.live() {
		resp := r.call(ctxFor(c.t, 10*time.Second), http.MethodGet, "/readyz", "", nil, nil)
		if resp.StatusCode != http.StatusServiceUnavailable {
			c.t.Errorf("GET /readyz during the outage: %d, want 503", resp.StatusCode)
		}
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		resp = r.call(ctxFor(c.t, 10*time.Second), http.MethodPost, "/api/v1/sessions", c.token, map[string]string{"locale": "en"}, &body)
		if resp.StatusCode != http.StatusServiceUnavailable || body.Error.Code != "database_unavailable" || resp.Header.Get("Retry-After") == "" {
			c.t.Errorf("POST /api/v1/sessions during the outage: %d %q Retry-After %q, want 503 database_unavailable with Retry-After",
				resp.StatusCode, body.Error.Code, resp.Header.Get("Retry-After"))
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}
}
