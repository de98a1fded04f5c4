package api

import (
	"bufio"
	"net"
	"net/http"
	"testing"
)

// TestLimitConnections: past the cap a connection is answered 503 with Retry-After and
// closed; a connection closed gives its place back.
func TestLimitConnections(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitConnections(inner, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	first, _ := <-accepted, <-accepted
	refused := dial()
	resp, err := http.ReadResponse(bufio.NewReader(refused), nil)
	if err != nil {
		t.Fatalf("the third connection got no answer: %v", err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("the third connection got %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	first.Close()
	dial()
	if c := <-accepted; c == nil {
		t.Fatal("a connection after one closed was not accepted")
	}
}

func TestStreamSlots(t *testing.T) {
	s := newStreamSlots(2)
	r1, err1 := s.take("u")
	_, err2 := s.take("u")
	if err1 != nil || err2 != nil {
		t.Fatalf("two streams under a cap of two: %v, %v", err1, err2)
	}
	if _, err := s.take("u"); err == nil {
		t.Fatal("a third stream was allowed")
	} else if he, _ := err.(*HTTPError); he == nil || he.Status != http.StatusTooManyRequests || he.Code != "too_many_streams" {
		t.Fatalf("third stream: %v, want 429 too_many_streams", err)
	}
	if _, err := s.take("other"); err != nil {
		t.Fatalf("another user was refused: %v", err)
	}
	r1()
	r1() // once
	if _, err := s.take("u"); err != nil {
		t.Fatalf("a slot given back was not free: %v", err)
	}
	if _, err := s.take("u"); err == nil {
		t.Fatal("giving one slot back twice freed two")
	}
}
