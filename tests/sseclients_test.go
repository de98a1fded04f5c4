package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// sseCuts is the cut proxy's schedule for one client: connections cut in the middle of a
// data: line and right after a frame, alternately, at different frames, then one let
// through to the end.
var sseCuts = []cut{
	{kind: cutInData, frame: 1}, {kind: cutAtBoundary, frame: 2}, {kind: cutInData, frame: 3},
	{kind: cutAtBoundary, frame: 0}, {kind: cutInData, frame: 2}, {kind: cutInData, frame: 0},
}

// npmClients is the folder of the npm packages the tests run (tests/sseclients), installed
// by .ci/run with npm ci. Without them the test skips on a developer's machine and fails in
// CI.
func npmClients(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("sseclients")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the npm clients are not installed (npm ci --prefix tests/sseclients): %v", err)
		}
		t.Skipf("the npm clients are not installed (npm ci --prefix tests/sseclients): %v", err)
	}
	return dir
}

// followed is what follow.mjs prints.
type followed struct {
	Reply       string  `json:"reply"`
	IDs         []int64 `json:"ids"`
	End         string  `json:"end"`
	Connections int     `json:"connections"`
}

// TestNPMClientsFollowThroughCuts: each of the npm SSE clients front ends use follows a turn
// through a proxy that cuts its connections in the middle of frames' data: lines and at
// frame boundaries, reconnecting however the library does, and assembles exactly the
// stored reply: every event once, in order, none skipped (docs/api.md puts id:
// last, so a library that records the id as soon as it reads the line cannot skip the
// cut frame).
func TestNPMClientsFollowThroughCuts(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		dir := npmClients(t)
		s := startServer(t)
		tok := s.token("nina")
		sid := s.newSession(tok, "en")
		for _, client := range []string{"eventsource", "eventsource-parser", "fetch-event-source"} {
			t.Run(client, func(t *testing.T) {
				a := s.post(tok, sid, "A plain reply [[scenario:default]] [[pace_ms:20]]")
				proxy := newCutSchedule(t, s.base, sseCuts)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, "node", "follow.mjs", client, proxy.URL()+a.EventsURL, tok)
				cmd.Dir = dir
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("node follow.mjs %s: %v\n%s", client, err, stderrOf(err))
				}
				var got followed
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("follow.mjs printed %q: %v", out, err)
				}
				msg := waitFinished(t, s, tok, a.MessageID)
				if got.End != "completed" || got.Reply != msg["content"] {
					t.Fatalf("%s assembled %q (ended %q), want the stored reply %q", client, got.Reply, got.End, msg["content"])
				}
				for i, id := range got.IDs {
					if id != int64(i+1) {
						t.Fatalf("%s handled the events %v: want each once, in order, from 1", client, got.IDs)
					}
				}
				if got.Connections != len(sseCuts)+1 {
					t.Errorf("%s opened %d connections, want %d (one per cut, and the last)", client, got.Connections, len(sseCuts)+1)
				}
			})
		}
	})
}

// stderrOf is what a failed command wrote to its standard error.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
