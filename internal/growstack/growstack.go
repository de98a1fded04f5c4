// Package growstack grows the calling goroutine's stack in one step, early, to a size the
// goroutine is known to reach anyway.
//
// A goroutine starts with a small stack and the runtime doubles it whenever a call would
// overflow it, copying the stack and adjusting every frame on it. A deep path (a turn's
// begin: echo's middleware, the store, encoding/json) met those doublings at depth 30 and
// more, where each copy walks every frame: 4% of a replica's CPU went to copying stacks.
// Growing once at the top of such a path copies a few frames instead. Growing further than
// the path goes would hold memory for nothing (and the collector shrinks a stack that
// uses under a quarter of it), so a caller grows only to what it measured the path reaches.
package growstack

// To16KiB grows the stack to 16 KiB: a frame of 10 KiB, with the runtime's guard and the
// little a shallow caller uses, fits in 16 KiB and not in 8. (A caller already using over
// 5 KiB would get 32 KiB: call it near the top of a goroutine.)
//
//go:noinline
func To16KiB() {
	var b [10 << 10]byte
	keep(b[:])
}

// keep uses b so that the compiler keeps its array, on the caller's frame: b does not
// escape.
//
//go:noinline
func keep(b []byte) { _ = b }
