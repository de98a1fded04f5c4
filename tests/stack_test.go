package tests

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// A generation waits on the upstream for as long as its reply streams, and holds the stack
// its goroutines grew to all that while: its own and the upstream connection's read and
// write loops. Planning, the request's JSON, encoding/json reading response.in_progress and
// a trace's redaction each once took the generation's own stack a size class further, and
// the collector's heap goal grows with it (docs/performance.md). This is a figure, not a
// rule: the runtime's own count of stack memory, read from the pprof listener, is reported
// as stack-KiB/gen beside loadbench's KiB/gen, whose bound it explains. The server under
// test offers MCP tools, so each request's trace is redacted the long way.
//
//	go test -run '^$' -bench WaitingGenerationStack ./tests
func BenchmarkWaitingGenerationStack(b *testing.B) {
	const generations = 40
	debug := fmt.Sprintf("127.0.0.1:%d", freePort(b))
	// Every goroutine starts at 2 KiB (not at the runtime's running average), so each
	// stack is what its own depth needs.
	s := startServerOn(b, plainBinary(b), func(string) []string {
		return []string{"PHASEFLOW_DEBUG_ADDR=" + debug, "PHASEFLOW_MAX_TURNS=100000", "GODEBUG=adaptivestackstart=0"}
	})
	tok := s.token("stack")
	var total float64
	for b.Loop() {
		sessions := make([]string, generations)
		for i := range sessions {
			sessions[i] = s.newSession(tok, "en")
		}
		time.Sleep(500 * time.Millisecond) // the sessions' connections settle
		before := stackInUse(b, debug)
		for _, id := range sessions {
			a := s.post(tok, id, "A plain reply, slowly [[scenario:default]] [[pace_ms:60000]]")
			waitForFirstDelta(b, s, a)
		}
		time.Sleep(time.Second) // the followers' connections close
		total += float64(stackInUse(b, debug)-before) / generations
	}
	b.ReportMetric(total/float64(b.N)/1024, "stack-KiB/gen")
}

// A stream that waits holds no goroutine of the server's (api/waiting.go): a generation
// whose client follows it from its own POST holds the goroutines of one nobody follows, and
// a device following a message (GET …/events) holds none. A goroutine per waiting stream
// held its stack, 4 KiB once it had written, and as much again of the collector's heap
// goal.
func TestWaitingStreamsHoldNoGoroutine(t *testing.T) {
	const streams = 30
	debug := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := startServerOn(t, binary, func(string) []string {
		return []string{"PHASEFLOW_DEBUG_ADDR=" + debug, "PHASEFLOW_MAX_TURNS=200"}
	})
	tok := s.token("waiting")
	const slow = "A plain reply, slowly [[scenario:default]] [[pace_ms:60000]]"
	sessions := make([]string, 2*streams)
	for i := range sessions {
		sessions[i] = s.newSession(tok, "en")
	}
	ctx := ctxFor(t, time.Minute)
	base := goroutines(t, debug)

	var first turnAnswer
	for i, id := range sessions[:streams] { // generations nobody follows
		a := s.post(tok, id, slow)
		waitStreaming(t, s, tok, a.MessageID)
		if i == 0 {
			first = a
		}
	}
	unfollowed := goroutines(t, debug) - base

	for _, id := range sessions[streams:] { // generations followed from their POST
		st, err := postForStream(ctx, s.base, tok, id, slow)
		if err != nil {
			t.Fatal(err)
		}
		defer st.close()
		readUntil(t, st, "content_delta")
	}
	followed := goroutines(t, debug) - base - unfollowed

	for range streams { // devices following the first generation
		st := s.openEvents(ctx, first.eventsURL(), 0)
		defer st.close()
		readUntil(t, st, "content_delta")
	}
	devices := goroutines(t, debug) - base - unfollowed - followed

	t.Logf("goroutines for %d generations: %d nobody follows, %d followed from their POST; %d for %d devices", streams, unfollowed, followed, devices, streams)
	if followed > unfollowed+streams/4 {
		t.Errorf("%d generations followed from their POST hold %d goroutines, %d nobody follows hold %d: each waiting stream holds one", streams, followed, streams, unfollowed)
	}
	if devices > streams/4 {
		t.Errorf("%d devices following a message hold %d goroutines, want about none", streams, devices)
	}
}

// waitStreaming polls a message until its reply streams.
func waitStreaming(t *testing.T, s *server, token, messageID string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var msg map[string]any
		s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/messages/"+messageID, token, nil, &msg)
		if msg["status"] == "streaming" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("message %s was not streaming 20 s after its post", messageID)
}

// readUntil reads st until an event named name.
func readUntil(t testing.TB, st *sseStream, name string) {
	t.Helper()
	for {
		ev, err := st.next()
		if err != nil {
			t.Fatalf("no %s: %v", name, err)
		}
		if ev.Name == name {
			return
		}
	}
}

var goroutinesLine = regexp.MustCompile(`goroutine profile: total (\d+)`)

// goroutines is the server's goroutine count, once the streams just opened have settled.
func goroutines(t *testing.T, debugAddr string) int {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	return debugFigure(t, "http://"+debugAddr+"/debug/pprof/goroutine?debug=1", goroutinesLine)
}

// plainBinary builds phaseflow without the race detector, whose instrumentation makes
// every frame larger: the stacks measured are a deployment's.
func plainBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "phaseflow")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/phaseflow").CombinedOutput(); err != nil {
		t.Fatalf("build phaseflow without -race: %v\n%s", err, out)
	}
	return bin
}

// waitForFirstDelta follows a's message until its first content_delta, then leaves.
func waitForFirstDelta(t testing.TB, s *server, a turnAnswer) {
	t.Helper()
	st := s.openEvents(ctxFor(t, 20*time.Second), a.eventsURL(), 0)
	defer st.close()
	readUntil(t, st, "content_delta")
}

var stackLine = regexp.MustCompile(`(?m)^# Stack = (\d+) `)

// stackInUse is the server's goroutine stack memory, as the runtime counts it after a
// collection.
func stackInUse(t testing.TB, debugAddr string) int {
	t.Helper()
	// gc=1 collects first: the stacks of goroutines that ended (each turn's planning one)
	// are counted until a collection frees their spans.
	return debugFigure(t, "http://"+debugAddr+"/debug/pprof/heap?debug=1&gc=1", stackLine)
}

// debugFigure reads the page at url of the server's pprof listener and the number re
// captures in it.
func debugFigure(t testing.TB, url string, re *regexp.Regexp) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := re.FindSubmatch(page)
	if m == nil {
		t.Fatalf("%s: no %s in:\n%.300s", url, re, page)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
