package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	sio := stdio{in: strings.NewReader(""), out: io.Discard, err: io.Discard, getenv: func(string) string { return "" }}
	if code := run(context.Background(), sio, []string{"healthcheck", "--addr", addr}); code != 0 {
		t.Fatalf("a ready server: exit %d, want 0", code)
	}
	ready = false
	if code := run(context.Background(), sio, []string{"healthcheck", "--addr", addr}); code != 1 {
		t.Fatalf("a server that is not ready: exit %d, want 1", code)
	}
	sio.getenv = func(k string) string { return map[string]string{"PHASEFLOW_ADDR": addr}[k] }
	ready = true
	if code := run(context.Background(), sio, []string{"healthcheck"}); code != 0 {
		t.Fatalf("the address from PHASEFLOW_ADDR: exit %d, want 0", code)
	}
	if got := probeAddr("0.0.0.0:8080"); got != "127.0.0.1:8080" {
		t.Fatalf("probeAddr(0.0.0.0:8080) = %s", got)
	}
}
