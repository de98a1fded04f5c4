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

// Options are what the log's user sets. Its bounds and waits are its own (tuning).
type Options struct {
	// Observe, when set, is called after every commit attempt with the batch size, the
	// time it took and its error (metrics).
	Observe func(events int, took time.Duration, err error)
}

// tuning holds the log's bounds and waits; the zero value of a field means its default,
// and tests shorten them.
type tuning struct {
	// maxBatch caps the events of one commit.
	maxBatch int
	// maxPending bounds the uncommitted events one message may hold: past it the
	// producer waits for the database. A terminal event is always accepted, so a turn can
	// always end.
	maxPending int
	// keepCommitted is how many committed events a message produced here keeps in memory
	// for its followers; older ones are read from the database, like another replica's, so
	// a turn's memory does not grow with its length.
	keepCommitted int
	// pollInterval is how often a cursor over a message that is not produced here re-reads
	// the database while waiting; notifications wake it earlier.
	pollInterval time.Duration
	// retryMin and retryMax bound the backoff between commit attempts while the database
	// fails.
	retryMin, retryMax time.Duration
	// commitTimeout bounds one commit attempt.
	commitTimeout time.Duration
	// traceWait is how long traces may wait for an event to ride with before they are
	// written alone, so a paced reply writes its request between two frames rather than
	// on one frame's commit.
	traceWait time.Duration
	// nudgeWait bounds how long a delta a client waits on holds its producer for its
	// commit (Writer.nudge): a few commits' time on a loaded database.
	nudgeWait time.Duration
	// pause is the silence after which a delta counts as paced by the model, and is
	// nudged like an attempt's first.
	pause time.Duration
}

func (t tuning) withDefaults() tuning {
	t.maxBatch = cmpOr(t.maxBatch, 512)
	t.maxPending = cmpOr(t.maxPending, 1024)
	t.keepCommitted = cmpOr(t.keepCommitted, 1024)
	t.pollInterval = cmpOr(t.pollInterval, 250*time.Millisecond)
	t.retryMin = cmpOr(t.retryMin, 50*time.Millisecond)
	t.retryMax = cmpOr(t.retryMax, 2*time.Second)
	t.commitTimeout = cmpOr(t.commitTimeout, 10*time.Second)
	t.traceWait = cmpOr(t.traceWait, 5*time.Millisecond)
	t.nudgeWait = cmpOr(t.nudgeWait, 5*time.Millisecond)
	t.pause = cmpOr(t.pause, 5*time.Millisecond)
	return t
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
	tune   tuning
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
	return newLog(st, owner, logger, opts, tuning{})
}

// newLog is New with the given tuning.
func newLog(st Store, owner string, logger *slog.Logger, opts Options, tune tuning) *Log {
	l := &Log{
		store: st, owner: owner, logger: logger, opts: opts, tune: tune.withDefaults(), waker: newWaker(),
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
	// Unwritten says Committed are not in the database yet: whoever opens the log is
	// writing them (a turn's begin, whose rows carry its first events). The message's events
	// are numbered after them and held, unseen and uncommitted, until [Writer.Begun] says
	// how that write ended.
	Unwritten bool
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
	s := newStream(messageID, o, l.tune.keepCommitted)
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
// s.queued (an append, a trace timer, Close), so s is in the dirty list at most once and
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

// tracesWaited ends the wait of s's traces for an event to ride with: they are queued for
// the committer, alone if no event came.
func (l *Log) tracesWaited(s *stream) {
	s.mu.Lock()
	s.tracesWait = false
	s.mu.Unlock()
	l.queue(s)
}

// queue queues s for the committer when it holds events or traces the committer has not
// taken, is not queued yet and is not held (Opening.Unwritten).
func (l *Log) queue(s *stream) {
	s.mu.Lock()
	queue := !s.queued && !s.lost && !s.held && s.pending()
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
	for _, s := range live { // traces still waiting for an event are drained with the rest
		l.queue(s)
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
