package userlimit

import (
	"container/list"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMaxUsers bounds the users whose buckets [Rate] remembers.
const DefaultMaxUsers = 100_000

// Rate gives each user a token bucket: burst messages at once, refilled at perMinute. The
// buckets live in a map bounded by maxUsers; when it is full the least recently seen user's
// bucket is dropped. A dropped user starts again with a full bucket, which costs nothing in
// practice: a bucket idle for burst/perMinute minutes (20 s by default) is full anyway, and
// only users who posted more recently than the maxUsers-th most recent one are kept. It is
// safe for concurrent use.
type Rate struct {
	limit    rate.Limit
	burst    int
	maxUsers int
	now      func() time.Time

	mu    sync.Mutex
	users map[string]*list.Element // of *bucket
	lru   list.List                // front: most recently seen
}

type bucket struct {
	user string
	lim  *rate.Limiter
}

// NewRate allows each user perMinute messages a minute on average and burst at once, and
// remembers at most maxUsers users (0 means DefaultMaxUsers).
func NewRate(perMinute float64, burst, maxUsers int) *Rate {
	if maxUsers <= 0 {
		maxUsers = DefaultMaxUsers
	}
	return &Rate{limit: rate.Limit(perMinute / 60), burst: max(burst, 1), maxUsers: maxUsers,
		now: time.Now, users: make(map[string]*list.Element)}
}

// Allow takes one message from userID's bucket. When the bucket is empty it takes nothing
// and returns false with how long until a message would be allowed (for Retry-After).
func (r *Rate) Allow(userID string) (bool, time.Duration) {
	now := r.now()
	lim := r.limiter(userID)
	res := lim.ReserveN(now, 1)
	if !res.OK() {
		return false, time.Duration(math.MaxInt64)
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// limiter returns userID's bucket, making it (and dropping the least recently seen one when
// full) as needed.
func (r *Rate) limiter(userID string) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if el, ok := r.users[userID]; ok {
		r.lru.MoveToFront(el)
		return el.Value.(*bucket).lim
	}
	if len(r.users) >= r.maxUsers {
		oldest := r.lru.Back()
		r.lru.Remove(oldest)
		delete(r.users, oldest.Value.(*bucket).user)
	}
	b := &bucket{user: userID, lim: rate.NewLimiter(r.limit, r.burst)}
	r.users[userID] = r.lru.PushFront(b)
	return b.lim
}

// Users reports how many buckets are remembered.
func (r *Rate) Users() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.users)
}
