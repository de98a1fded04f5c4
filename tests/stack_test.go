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
// its goroutines grew to all that while: its own, which waits about 5 KiB deep and grows to
// 8 KiB, and the upstream connection's read and write loops (8 KiB, having read the
// response's headers, and 4). Planning, the request's JSON, encoding/json reading
// response.in_progress and a trace's redaction each once took the generation's own past
// 8 KiB to 16: 27-28 KiB a generation in this test, against 19-21 now, and as much again of
// the collector's heap goal (README, Performance). The runtime's own count of stack memory,
// read from the pprof listener, tells a regression at once; the server under test offers
// MCP tools, so each request's trace is redacted the long way.
func TestWaitingGenerationsHoldLittleStack(t *testing.T) {
	const generations = 40
	debug := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// Every goroutine starts at 2 KiB (not at the runtime's running average), so each
	// stack is what its own depth needs.
	s := startServerOn(t, plainBinary(t), func(string) []string {
		return []string{"PHASEFLOW_DEBUG_ADDR=" + debug, "PHASEFLOW_MAX_TURNS=200", "GODEBUG=adaptivestackstart=0"}
	})
	tok := s.token("stack")
	sessions := make([]string, generations)
	for i := range sessions {
		sessions[i] = s.newSession(tok, "en")
	}
	time.Sleep(500 * time.Millisecond) // the sessions' connections settle
	before := stackInUse(t, debug)
	for _, id := range sessions {
		a := s.post(tok, id, "A plain reply, slowly [[scenario:default]] [[pace_ms:60000]]")
		waitForFirstDelta(t, s, a)
	}
	time.Sleep(time.Second) // the followers' connections close
	per := (stackInUse(t, debug) - before) / generations
	t.Logf("goroutine stacks per waiting generation: %d KiB", per>>10)
	if per > 24<<10 {
		t.Errorf("goroutine stacks per waiting generation = %d KiB, want at most 24 (8 for the generation, 8 and 4 for the upstream connection's read and write loops)", per>>10)
	}
}

// plainBinary builds phaseflow without the race detector, whose instrumentation makes
// every frame larger: the stacks measured are a deployment's.
func plainBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "phaseflow")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/phaseflow").CombinedOutput(); err != nil {
		t.Fatalf("build phaseflow without -race: %v\n%s", err, out)
	}
	return bin
}

// waitForFirstDelta follows a's message until its first content_delta, then leaves.
func waitForFirstDelta(t *testing.T, s *server, a turnAnswer) {
	t.Helper()
	st := s.openEvents(ctxFor(t, 20*time.Second), a.eventsURL(), 0)
	defer st.close()
	for {
		ev, err := st.next()
		if err != nil {
			t.Fatalf("message %s: no content_delta: %v", a.MessageID, err)
		}
		if ev.Name == "content_delta" {
			return
		}
	}
}

var stackLine = regexp.MustCompile(`(?m)^# Stack = (\d+) `)

// stackInUse is the server's goroutine stack memory, as the runtime counts it after a
// collection.
func stackInUse(t *testing.T, debugAddr string) int {
	t.Helper()
	// gc=1 collects first: the stacks of goroutines that ended (each turn's planning one)
	// are counted until a collection frees their spans.
	resp, err := http.Get("http://" + debugAddr + "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := stackLine.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no stack figure in the heap profile:\n%.500s", page)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
