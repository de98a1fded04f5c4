package admission

import (
	"errors"
	"testing"
)

// oneEach lets each user run one turn.
type oneEach map[string]bool

var errUserBusy = errors.New("this user already runs a turn")

func (o oneEach) Acquire(u string, _ int) error {
	if o[u] {
		return errUserBusy
	}
	o[u] = true
	return nil
}
func (o oneEach) Release(u string) { delete(o, u) }

func TestLimits(t *testing.T) {
	l := New(2, oneEach{})
	steps := []struct {
		acquire, release string
		want             error
	}{
		{acquire: "ann"},
		{acquire: "ann", want: errUserBusy}, // takes no server slot
		{acquire: "bob"},
		{acquire: "cid", want: ErrOverCapacity}, // the server's bound first
		{release: "ann"},
		{acquire: "cid"},
		{acquire: "ann", want: ErrOverCapacity},
	}
	for i, s := range steps {
		if s.release != "" {
			l.Release(s.release)
			continue
		}
		if err := l.Acquire(s.acquire, 0); !errors.Is(err, s.want) {
			t.Fatalf("step %d: Acquire(%s) = %v, want %v", i, s.acquire, err, s.want)
		}
	}
}
