package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// Store is what the log needs of persistence.
type Store interface {
	AppendEvents(ctx context.Context, evs []store.Event) error
	ListEvents(ctx context.Context, messageID string, afterSeq int64, limit int) ([]store.Event, error)
}

// ErrClosed is returned by appends after the log was closed.
var ErrClosed = errors.New("eventlog: closed")

// Options tune the batching writer. The zero value gives the defaults.
type Options struct {
	// FlushInterval is how long the writer gathers events before one insert (default 5ms).
	FlushInterval time.Duration
	// MaxBatch caps the events of one insert (default 256).
	MaxBatch int
	// QueueSize bounds the events waiting for the writer (default 8192).
	QueueSize int
	// PollInterval is how often a cursor over a message that is not live here re-reads the
	// database while waiting (default 250ms); notifications wake it earlier.
	PollInterval time.Duration
}

func (o Options) withDefaults() Options {
	if o.FlushInterval <= 0 {
		o.FlushInterval = 5 * time.Millisecond
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 8192
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 250 * time.Millisecond
	}
	return o
}

// Log owns the live streams of this process and the batching writer goroutine.
type Log struct {
	store  Store
	logger *slog.Logger
	opts   Options

	queue chan *pending
	stop  chan struct{}
	done  chan struct{}

	mu     sync.Mutex
	live   map[string]*stream
	closed bool
	waker  *waker
}

// pending is one event on its way to the database, with the stream to tell when it landed.
type pending struct {
	ev     store.Event
	stream *stream
}

// New starts the log's writer goroutine; [Log.Close] stops it after draining the queue.
func New(st Store, logger *slog.Logger, opts Options) *Log {
	opts = opts.withDefaults()
	l := &Log{
		store:  st,
		logger: logger,
		opts:   opts,
		queue:  make(chan *pending, opts.QueueSize),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		live:   make(map[string]*stream),
		waker:  newWaker(),
	}
	go l.writeLoop()
	return l
}

// Open registers a live stream for messageID whose log so far ends at lastSeq (0 for a new
// message) and returns its single writer. Open before telling anyone the message id, so
// that every client finds the stream live or, once it ended, complete in the database.
func (l *Log) Open(messageID string, lastSeq int64) (*Writer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if _, ok := l.live[messageID]; ok {
		return nil, fmt.Errorf("eventlog: message %s already has a writer", messageID)
	}
	s := newStream(messageID, lastSeq)
	l.live[messageID] = s
	return &Writer{log: l, s: s}, nil
}

func (l *Log) lookup(messageID string) *stream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live[messageID]
}

func (l *Log) forget(s *stream) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live[s.messageID] == s {
		delete(l.live, s.messageID)
	}
}

// Notify wakes the cursors waiting on messageID in the database (called when another
// replica announces new events, e.g. through PostgreSQL LISTEN/NOTIFY). An empty id wakes
// every such cursor, for a resync after lost notifications.
func (l *Log) Notify(messageID string) { l.waker.wake(messageID) }

// Close stops accepting writers, writes what is queued and stops the writer goroutine.
func (l *Log) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
}

// encode marshals an event payload as one line of JSON. HTML escaping is off: replies are
// full of "<" and ">", and "\u003c" would only make every frame longer and harder to read.
func encode(data any) (store.JSON, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(data); err != nil {
		return nil, fmt.Errorf("eventlog: encode %T: %w", data, err)
	}
	return store.JSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// isTerminal reports whether ev ends its stream.
func isTerminal(ev store.Event) bool { return events.IsTerminal(ev.Name) }
