package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/upstream"
)

// lockedBuffer is a bytes.Buffer safe for the command's log writes and the test's read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestMockUpstreamServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr lockedBuffer
	sio := stdio{in: strings.NewReader(""), out: outW, err: &stderr, getenv: func(string) string { return "" }}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, sio, []string{"mock-upstream", "--addr", "127.0.0.1:0", "--pace", "0", "--chunk-size", "7"})
		outW.Close()
	}()

	rd := bufio.NewReader(outR)
	line, err := rd.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the URL line: %v (stderr: %s)", err, stderr.String())
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "PHASEFLOW_UPSTREAM_URL=")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/v1") {
		t.Fatalf("stdout line = %q, want PHASEFLOW_UPSTREAM_URL=http://127.0.0.1:PORT/v1", line)
	}
	line, err = rd.ReadString('\n')
	if mcp, ok := strings.CutPrefix(strings.TrimSpace(line), "PHASEFLOW_MCP_SERVERS="); err != nil || !ok || !strings.Contains(mcp, "strategy_engine=http://127.0.0.1:") {
		t.Fatalf("second stdout line = %q (%v), want PHASEFLOW_MCP_SERVERS=strategy_engine=…", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, rd) }() // ends when the command closes outW

	c := upstream.New(upstream.Config{BaseURL: url})
	defer c.CloseIdleConnections()
	var text strings.Builder
	completed := false
	req := upstream.Request{Model: "m", Input: []upstream.InputItem{{Role: "user", Content: "hello mock"}}}
	for ev, err := range c.Stream(ctx, req) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if ev.Kind == upstream.EventTextDelta && len([]rune(ev.Delta)) > 7 {
			t.Errorf("delta %q is longer than --chunk-size 7", ev.Delta)
		}
		text.WriteString(ev.Delta)
		completed = completed || ev.Kind == upstream.EventCompleted
	}
	if !completed || !strings.Contains(text.String(), "hello mock") || !strings.Contains(text.String(), "<final>") {
		t.Errorf("completed = %v, reply:\n%s", completed, text.String())
	}

	chat := upstream.NewChat(upstream.ChatConfig{BaseURL: url})
	defer chat.CloseIdleConnections()
	text.Reset()
	for ev, err := range chat.Stream(ctx, req) {
		if err != nil {
			t.Fatalf("chat stream: %v", err)
		}
		text.WriteString(ev.Delta)
	}
	if !strings.Contains(text.String(), "hello mock") {
		t.Errorf("the chat wire's reply lacks the user's text:\n%s", text.String())
	}

	cancel()
	select {
	case got := <-code:
		if got != 0 {
			t.Errorf("exit status %d, want 0 (stderr: %s)", got, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not return after ctx was cancelled")
	}
}

func TestMockUpstreamUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{name: "help", args: []string{"-h"}, want: 0},
		{name: "unknown flag", args: []string{"--nope"}, want: 2},
		{name: "stray argument", args: []string{"extra"}, want: 2},
		{name: "negative pace", args: []string{"--pace", "-1ms"}, want: 2},
		{name: "zero chunk size", args: []string{"--chunk-size", "0"}, want: 2},
		{name: "invalid address", args: []string{"--addr", "256.0.0.1:1"}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb lockedBuffer
			sio := stdio{in: strings.NewReader(""), out: &out, err: &errb, getenv: func(string) string { return "" }}
			if got := runMockUpstream(t.Context(), sio, tt.args); got != tt.want {
				t.Errorf("exit status %d, want %d (stderr: %s)", got, tt.want, errb.String())
			}
			if tt.name == "help" {
				if !strings.Contains(out.String(), "--chunk-size") {
					t.Errorf("help on stdout = %q, want the --flags", out.String())
				}
			} else if out.String() != "" {
				t.Errorf("stdout = %q, want nothing", out.String())
			}
		})
	}
}
