package tests

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestTheREADMEWalkThrough runs the curl steps of the README's "A turn with curl" against
// the binary, as written (the placeholders filled from the answers before them), and holds
// the answers to what the README shows: every value it writes out in full, the ids and the
// reply length included, so the walk-through cannot go stale.
func TestTheREADMEWalkThrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set and curl is missing")
		}
		t.Skip("curl is missing")
	}
	steps := readmeSteps(t)
	// As the README runs it: the built-in scripted upstream.
	s := startServer(t, "PHASEFLOW_UPSTREAM_URL=", "PHASEFLOW_UPSTREAM_MODEL=gpt-4o-mini", "PHASEFLOW_MCP_SERVERS=")
	vars := map[string]string{"TOKEN": s.token("dev"), "API": s.base + "/api/v1"}
	for i, st := range steps {
		cmd := strings.ReplaceAll(st.command, "http://127.0.0.1:8080", s.base)
		c := exec.Command("bash", "-c", cmd)
		c.Env = os.Environ()
		for k, v := range vars {
			c.Env = append(c.Env, k+"="+v)
		}
		out, err := c.Output()
		if err != nil {
			t.Fatalf("step %d %q: %v", i+1, cmd, err)
		}
		got := string(out)
		st.check(t, got)
		var answer map[string]any
		if json.Unmarshal(out, &answer) == nil {
			for from, to := range map[string]string{"id": "SESSION", "message_id": "MSG", "stream_token": "STREAM_TOKEN"} {
				if v, ok := answer[from].(string); ok && vars[to] == "" {
					vars[to] = v
				}
			}
		}
	}
}

// readmeStep is one curl command of the walk-through and the answer the README shows.
type readmeStep struct {
	command string
	shown   []string // the comment lines after it, without "# "
}

// readmeSteps reads the walk-through's code block.
func readmeSteps(t *testing.T) []readmeStep {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## A turn with curl")
	_, block, ok2 := strings.Cut(rest, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("the README has no \"A turn with curl\" block")
	}
	var steps []readmeStep
	var cur *readmeStep
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "curl "):
			steps = append(steps, readmeStep{command: line})
			cur = &steps[len(steps)-1]
		case cur != nil && strings.HasPrefix(line, "  ") && strings.HasSuffix(cur.command, "\\"):
			cur.command += "\n" + line
		case cur != nil && strings.HasPrefix(line, "# ") && !regexp.MustCompile(`^# \d+\. `).MatchString(line):
			cur.shown = append(cur.shown, strings.TrimPrefix(line, "# "))
		default:
			cur = nil
		}
	}
	if len(steps) < 6 {
		t.Fatalf("the walk-through has %d curl steps, want 6 or more", len(steps))
	}
	return steps
}

// shownPair is one "key":value of an answer the README writes out in full.
var shownPair = regexp.MustCompile(`"([a-z_]+)":("[^"…]*"|-?\d+)`)

// check holds got to what the step shows: its JSON answers' values written in full, the
// events with their ids and values, and a status line.
func (st readmeStep) check(t *testing.T, got string) {
	t.Helper()
	var event string
	var data string
	for _, line := range st.shown {
		switch {
		case strings.HasPrefix(line, "HTTP/"):
			if !strings.HasPrefix(got, line) {
				t.Errorf("%s\nanswers %q, the README shows %q", st.command, firstLine(got), line)
			}
		case strings.HasPrefix(line, "retry: "):
			if !strings.HasPrefix(got, line+"\n") {
				t.Errorf("the stream does not begin with %q", line)
			}
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "id: "):
			id, _ := strconv.Atoi(strings.TrimPrefix(line, "id: "))
			frame := frameOf(got, event)
			if !strings.Contains(frame, "\nid: "+strconv.Itoa(id)+"\n") {
				t.Errorf("the first %s event is not id %d, as the README shows:\n%s", event, id, frame)
			}
			checkPairs(t, st.command, data, frame)
		case strings.HasPrefix(line, "{") || strings.HasPrefix(line, " \""):
			checkPairs(t, st.command, line, got)
		}
	}
}

// checkPairs checks that got holds each pair shown writes out in full.
func checkPairs(t *testing.T, what, shown, got string) {
	t.Helper()
	for _, m := range shownPair.FindAllStringSubmatch(shown, -1) {
		if !strings.Contains(got, `"`+m[1]+`":`+m[2]) {
			t.Errorf("%s\nanswers without %s:%s as the README shows it:\n%s", what, m[1], m[2], firstLine(got))
		}
	}
}

// frameOf is the first frame of event name in a stream.
func frameOf(stream, name string) string {
	for _, f := range strings.Split(stream, "\n\n") {
		if strings.Contains(f, "event: "+name+"\n") {
			return f + "\n"
		}
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
