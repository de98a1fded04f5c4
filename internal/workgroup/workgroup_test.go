package workgroup

import (
	"sync/atomic"
	"testing"
)

func TestGoAndWait(t *testing.T) {
	var g Group
	var n atomic.Int32
	for range 10 {
		if !g.Go(func() { n.Add(1) }) {
			t.Fatal("a start before Close was refused")
		}
	}
	g.Close()
	g.Wait()
	if n.Load() != 10 {
		t.Fatalf("%d of 10 ran before Wait returned", n.Load())
	}
	if g.Go(func() { n.Add(1) }) {
		t.Fatal("a start after Close was taken")
	}
	g.Wait()
	if n.Load() != 10 {
		t.Fatal("a refused start ran")
	}
}

// A goroutine may start another through the group until Close: the count never drops to
// zero while Wait waits, because the starter holds its own.
func TestNestedStarts(t *testing.T) {
	var g Group
	done := make(chan struct{})
	g.Go(func() { g.Go(func() { close(done) }) })
	<-done
	g.Close()
	g.Wait()
}

// A member holds the group open: a goroutine it starts is waited for, even when the wait
// began before the start.
func TestEnterHoldsTheWait(t *testing.T) {
	var g Group
	if !g.Enter() {
		t.Fatal("Enter refused on an open group")
	}
	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	var ran atomic.Bool
	g.Go(func() { ran.Store(true) })
	g.Leave()
	<-waited
	if !ran.Load() {
		t.Fatal("Wait returned before the member's goroutine ran")
	}
	g.Close()
	if g.Enter() {
		t.Fatal("Enter taken after Close")
	}
}
