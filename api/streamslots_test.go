package api

import (
	"net/http"
	"testing"
)

func TestStreamSlots(t *testing.T) {
	s := newStreamSlots(2)
	r1, err1 := s.hold("u")
	_, err2 := s.hold("u")
	if err1 != nil || err2 != nil {
		t.Fatalf("two streams under a cap of two: %v, %v", err1, err2)
	}
	if _, err := s.hold("u"); err == nil {
		t.Fatal("a third stream was allowed")
	} else if he, _ := err.(*HTTPError); he == nil || he.Status != http.StatusTooManyRequests || he.Code != "too_many_streams" {
		t.Fatalf("third stream: %v, want 429 too_many_streams", err)
	}
	if _, err := s.hold("other"); err != nil {
		t.Fatalf("another user was refused: %v", err)
	}
	r1()
	r1() // once
	if _, err := s.hold("u"); err != nil {
		t.Fatalf("a slot given back was not free: %v", err)
	}
	if _, err := s.hold("u"); err == nil {
		t.Fatal("giving one slot back twice freed two")
	}
}
