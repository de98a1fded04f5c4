// Package workgroup starts the goroutines a component owns, so that it can wait for every
// one of them when it stops, and none starts after that.
//
// It is nats-server's startGoRoutine in a type of its own: the count is taken under the
// group's lock, and a start after [Group.Close] is refused (Go returns false), so a late
// caller cannot slip a goroutine past the wait. A component keeps one Group, starts every
// goroutine it owns through [Group.Go], and calls [Group.Close] then [Group.Wait] when it
// stops.
package workgroup

import "sync"

// Group counts the goroutines started through it. The zero value is ready to use; a Group
// must not be copied after first use.
type Group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f on a new goroutine and reports true, or reports false and runs nothing once
// the group is closed.
func (g *Group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Go(f)
	return true
}

// Enter counts the caller as one of the group's members, as if it were a goroutine the
// group started, so Wait waits for it too; it reports false, counting nothing, once the
// group is closed. A caller that may start goroutines through the group on behalf of a
// request enters first, so the group cannot be waited out between its check and its start.
// Leave ends the membership.
func (g *Group) Enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// Leave ends a membership Enter began.
func (g *Group) Leave() { g.wg.Done() }

// Close refuses every later start. Goroutines already started go on; Wait waits for them.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// Wait waits for every goroutine started through the group. Call it after Close, or while
// no more starts can come.
func (g *Group) Wait() { g.wg.Wait() }
