package userlimit

import "sync"

// Streams caps the event streams each user holds open (PHASEFLOW_MAX_STREAMS_PER_USER), so
// one token opening thousands of streams cannot take the connections (and file
// descriptors) every other user and the database need. Unlike the other per-user limits,
// which count in the database across replicas, it counts on each replica: it guards the
// replica's own connections. What it holds is one count a user with streams open.
type Streams struct {
	max  int // 0: no cap
	mu   sync.Mutex
	open map[string]int
}

// NewStreams caps each user at max open streams (0: no cap).
func NewStreams(max int) *Streams { return &Streams{max: max, open: map[string]int{}} }

// Take holds one of user's streams and returns the function that gives it back (once), or
// false when the user already holds them all.
func (s *Streams) Take(user string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && s.open[user] >= s.max {
		return nil, false
	}
	s.open[user]++
	return sync.OnceFunc(func() { s.give(user) }), true
}

func (s *Streams) give(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[user]--; s.open[user] <= 0 {
		delete(s.open, user)
	}
}
