package userlimit

import "testing"

// A user at the cap is refused until one of their streams ends; other users are not
// touched by it, and a stream given back twice frees one slot only.
func TestStreamsCapEachUser(t *testing.T) {
	s := NewStreams(2)
	r1, ok1 := s.Take("lin")
	_, ok2 := s.Take("lin")
	if !ok1 || !ok2 {
		t.Fatal("the first two streams were refused")
	}
	if _, ok := s.Take("lin"); ok {
		t.Fatal("a third stream was let in")
	}
	if _, ok := s.Take("mei"); !ok {
		t.Fatal("another user was refused")
	}
	r1()
	r1()
	if _, ok := s.Take("lin"); !ok {
		t.Fatal("a stream given back did not free a slot")
	}
	if _, ok := s.Take("lin"); ok {
		t.Fatal("a stream given back twice freed two slots")
	}
}

func TestStreamsWithoutCap(t *testing.T) {
	s := NewStreams(0)
	for range 1000 {
		if _, ok := s.Take("lin"); !ok {
			t.Fatal("a stream was refused without a cap")
		}
	}
}
