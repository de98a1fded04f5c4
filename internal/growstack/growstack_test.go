package growstack

import (
	"testing"
	"unsafe"
)

// deep calls a function whose frame needs about 11 KiB of stack.
//
//go:noinline
func deep() {
	var b [11 << 10]byte
	keep(b[:])
}

// moves runs grow, then deep, on a fresh goroutine and reports whether the goroutine's stack
// moved during deep: the runtime grows a stack by copying it elsewhere, so a local's
// address changes exactly when the stack grew.
func moves(grow func()) bool {
	moved := make(chan bool)
	go func() {
		var marker byte
		grow()
		before := uintptr(unsafe.Pointer(&marker))
		deep()
		moved <- uintptr(unsafe.Pointer(&marker)) != before
	}()
	return <-moved
}

func TestGrowth(t *testing.T) {
	for _, tc := range []struct {
		name      string
		grow      func()
		wantMoved bool
	}{
		{name: "without growing first, the deep call moves the stack", grow: func() {}, wantMoved: true},
		{name: "after To16KiB it fits", grow: To16KiB, wantMoved: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := moves(tc.grow); got != tc.wantMoved {
				t.Errorf("stack moved during the deep call: %v, want %v", got, tc.wantMoved)
			}
		})
	}
}
