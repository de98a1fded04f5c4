package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// Store is what the log needs of persistence.
type Store interface {
	CommitEvents(ctx context.Context, owner string, evs []store.Event) (store.Unwritten, error)
	ListEvents(ctx context.Context, messageID string, afterSeq int64, limit int) ([]store.Event, error)
	Watch(ctx context.Context, messageID string) error
	RecordTraces(ctx context.Context, owner, messageID string, traces []store.Trace) (bool, error)
}

// Sentinel errors of appends.
var (
	// ErrClosed is returned by Open after the log was closed.
	ErrClosed = errors.New("eventlog: closed")
	// ErrLost is returned by appends to a message this replica no longer owns (another
	// replica took it over after its lease expired) or whose events could not be written.
	ErrLost = errors.New("eventlog: the message is no longer written by this replica")
	// ErrEnded is returned by appends after the terminal event.
	ErrEnded = errors.New("eventlog: the message already has its terminal event")
	// ErrRefused is returned by [Writer.Wait] when the store refused the message's finish
	// (its settlement: see store.Unwritten): the terminal event was dropped unseen, and the
	// producer must end the message with another one.
	ErrRefused = errors.New("eventlog: the store refused the message's finish")
)

// Options tune the log. The zero value gives the defaults.
type Options struct {
	// MaxBatch caps the events of one commit (default 512).
	MaxBatch int
	// MaxPending bounds the uncommitted events one message may hold (default 1024): past
	// it the producer waits for the database. A terminal event is always accepted, so a
	// turn can always end.
	MaxPending int
	// PollInterval is how often a cursor over a message that is not produced here re-reads
	// the database while waiting (default 250ms); notifications wake it earlier.
	PollInterval time.Duration
	// RetryMin and RetryMax bound the backoff between commit attempts while the database
	// fails (default 50ms and 2s).
	RetryMin, RetryMax time.Duration
	// CommitTimeout bounds one commit attempt (default 10s).
	CommitTimeout time.Duration
	// Linger is how long an event appended with [Writer.AppendLater] may wait for the next
	// one before it is committed alone (default 5ms).
	Linger time.Duration
	// TraceLinger is how long traces handed over with [Writer.Record] may wait for an event
	// to ride with before they are written alone (default 5ms), on a timer of their own so
	// that no lingering status waits for it. A turn records its request after its first
	// delta: a reply that arrives at once carries the trace with its next delta, and a
	// paced one writes it alone between its first two frames. Waiting 100 ms, so that the
	// second delta of a paced reply carried it, put the request's kilobytes (tens with a
	// long history) on that frame's commit: loadbench's gap phase, two alternated pairs,
	// SQLite's added p99 pooled over rounds −102, 95 µs at 5 ms and 174, 204 at 100 ms.
	TraceLinger time.Duration
	// NudgeWait bounds how long [Writer.Nudge] holds the producer for its commit (default
	// 5ms: a few commits' time on a loaded database).
	NudgeWait time.Duration
	// Observe, when set, is called after every commit attempt with the batch size, the
	// time it took and its error (metrics).
	Observe func(events int, took time.Duration, err error)
}

func (o Options) withDefaults() Options {
	o.MaxBatch = cmpOr(o.MaxBatch, 512)
	o.MaxPending = cmpOr(o.MaxPending, 1024)
	o.PollInterval = cmpOr(o.PollInterval, 250*time.Millisecond)
	o.RetryMin = cmpOr(o.RetryMin, 50*time.Millisecond)
	o.RetryMax = cmpOr(o.RetryMax, 2*time.Second)
	o.CommitTimeout = cmpOr(o.CommitTimeout, 10*time.Second)
	o.Linger = cmpOr(o.Linger, 5*time.Millisecond)
	o.TraceLinger = cmpOr(o.TraceLinger, 5*time.Millisecond)
	o.NudgeWait = cmpOr(o.NudgeWait, 5*time.Millisecond)
	return o
}

func cmpOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Log owns the live streams of this process and the committer goroutine.
type Log struct {
	store  Store
	owner  string
	logger *slog.Logger
	opts   Options
	waker  *waker

	mu     sync.Mutex
	live   map[string]*stream
	dirty  []*stream // streams holding events the committer has not taken, oldest first
	closed bool

	kick    chan struct{} // capacity 1: there is work for the committer
	stop    chan struct{} // closed by Close: drain, then exit
	abandon chan struct{} // closed when Close's deadline passed: stop retrying
	done    chan struct{} // closed when the committer has exited

	failingSince atomic.Int64 // Unix nanoseconds of the first failed commit of an outage; 0 when healthy
}

// New starts the log's committer for the replica owner; [Log.Close] stops it.
func New(st Store, owner string, logger *slog.Logger, opts Options) *Log {
	l := &Log{
		store: st, owner: owner, logger: logger, opts: opts.withDefaults(), waker: newWaker(),
		live: make(map[string]*stream),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), abandon: make(chan struct{}), done: make(chan struct{}),
	}
	go l.run()
	return l
}

// Opening is how a message's log continues in this process.
type Opening struct {
	// LastSeq is the position of the message's last committed event (0 for none).
	LastSeq int64
	// Committed are events already in the database, ending at LastSeq (such as the first
	// events written with the turn's rows), kept in memory for this process's followers.
	Committed []store.Event
	// OnLost is called once, from the committer, when the message turns out to be owned by
	// another replica or its events cannot be written: the producer must stop.
	OnLost func()
}

// Open registers messageID as produced here and returns its single writer. Open before
// starting to produce, so that this process's followers read the message from memory.
func (l *Log) Open(messageID string, o Opening) (*Writer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if _, ok := l.live[messageID]; ok {
		return nil, fmt.Errorf("eventlog: message %s already has a writer", messageID)
	}
	s := newStream(messageID, o)
	l.live[messageID] = s
	return &Writer{log: l, s: s}, nil
}

// Owner is the replica id this log writes as: the lease owner of the messages it produces.
func (l *Log) Owner() string { return l.owner }

func (l *Log) lookup(messageID string) *stream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live[messageID]
}

func (l *Log) forget(s *stream) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live[s.id] == s {
		delete(l.live, s.id)
	}
}

// markDirty queues s for the committer and wakes it. It is called only by whoever set
// s.queued (an append, a linger timer, Close), so s is in the dirty list at most once and
// the appends in between cost no shared lock.
func (l *Log) markDirty(s *stream) {
	l.mu.Lock()
	l.dirty = append(l.dirty, s)
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default: // already kicked
	}
}

// waitOver ends a wait of s's that a timer ran out (waiting is s.lingering or
// s.tracesWait, guarded by s.mu): what still waits in it is queued for the committer,
// traces alone if no event came.
func (l *Log) waitOver(s *stream, waiting *bool) {
	s.mu.Lock()
	*waiting = false
	s.mu.Unlock()
	l.queue(s)
}

// queue queues s for the committer when it holds events or traces the committer has not
// taken and is not queued yet (they linger).
func (l *Log) queue(s *stream) {
	s.mu.Lock()
	queue := !s.queued && !s.lost && s.pending()
	s.queued = s.queued || queue
	s.mu.Unlock()
	if queue {
		l.markDirty(s)
	}
}

// Notify wakes the cursors waiting on messageID in the database (called when another
// replica announces new events through PostgreSQL LISTEN/NOTIFY). An empty id wakes every
// such cursor, for a resync after lost notifications.
func (l *Log) Notify(messageID string) { l.waker.wake(messageID) }

// FailingSince reports when the current run of failed commits began, and false while
// commits succeed: how long the database has been unreachable, as far as the log knows.
func (l *Log) FailingSince() (time.Time, bool) {
	ns := l.failingSince.Load()
	if ns == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// Close stops accepting writers and waits until the events already appended are committed
// or ctx ends (a database still down at shutdown); then the committer gives up, and it
// returns an error saying how many events were left unwritten. Those were never shown to a
// client, and another replica's sweep ends their messages once their leases expire.
func (l *Log) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.closed = true
	live := make([]*stream, 0, len(l.live))
	for _, s := range l.live {
		live = append(live, s)
	}
	l.mu.Unlock()
	for _, s := range live { // what still lingers is drained with the rest
		l.waitOver(s, &s.lingering) // queues its waiting traces too
	}
	close(l.stop)
	select {
	case <-l.done:
	case <-ctx.Done():
		close(l.abandon)
		<-l.done
	}
	if n := l.unwritten(); n > 0 {
		return fmt.Errorf("eventlog: %d events left unwritten at close: %w", n, ctx.Err())
	}
	return nil
}

// unwritten counts the events of live streams that never reached the database.
func (l *Log) unwritten() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.live {
		n += s.pendingCount()
	}
	return n
}

// encode marshals an event payload the way every event is stored (events.Encode).
func encode(data any) (store.JSON, error) {
	b, err := events.Encode(data)
	return store.JSON(b), err
}

// isTerminal reports whether ev ends its stream.
func isTerminal(ev store.Event) bool { return events.IsTerminal(ev.Name) }
