package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
)

// Listener settings.
const (
	// notifyBuffer is the capacity of the channel Listen returns.
	notifyBuffer = 1024
	// listenPingEvery keeps the LISTEN connection checked: a dead TCP connection is only
	// noticed when something is sent on it, and lib/pq reconnects on the failed ping.
	listenPingEvery = 30 * time.Second
	// resyncRetry is how soon a pending Resync is offered again when the reader is slow and
	// no new notification arrives to carry it.
	resyncRetry = 50 * time.Millisecond
	// Reconnect back-off of the lib/pq listener.
	listenMinReconnect = 100 * time.Millisecond
	listenMaxReconnect = 10 * time.Second
)

// Notification says that a message's event log grew up to Seq, on this or another replica,
// or, with Cancel, that a cancel of the message was requested through some replica (Seq is
// then 0). Resync means notifications may have been lost (the LISTEN connection was
// re-established, or the reader fell behind and some were dropped): every follower should
// re-read the logs it follows from the database, and every owner re-read its cancel flags.
// MessageID and Seq are empty in a Resync.
type Notification struct {
	MessageID string
	Seq       int64
	Cancel    bool
	Resync    bool
}

// Watch asks that the commits of a running message be announced to every replica
// (Listen): a replica following a message that another one writes calls it before it reads
// the message's log from the database. A commit after Watch returns notifies; one before it
// wrote what the read that follows returns. Commits of a message nobody watches notify
// nobody: a NOTIFY costs its commit the notify queue's lock and a signal to every listening
// backend, the writer's own listener included (migration 0011). On SQLite, which has no
// notifications, and for a message that has ended or is watched already, it writes nothing.
func (s *Store) Watch(ctx context.Context, messageID string) error {
	if !s.isPostgres() {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `UPDATE messages SET watched = true
		WHERE id = $1 AND NOT watched AND status IN ('pending', 'streaming')`, messageID)
	if err != nil {
		return fmt.Errorf("store: watch message %s: %w", messageID, err)
	}
	return nil
}

// Listen follows the events CommitEvents and the cancels RequestCancel announce on
// PostgreSQL, from every replica. It returns once LISTEN is in place, so nothing announced
// after it returns is missed.
//
// The returned channel is closed when ctx ends or the store closes, after the goroutines
// Listen started have finished (Close waits for them too). It is buffered; when it is
// full, notifications are dropped and the next delivery is a single Resync instead, so a
// slow reader never stalls the LISTEN connection (whose own buffer is small) and never
// misses that it missed something.
//
// On SQLite Listen returns a nil channel and a nil error: one process owns the database,
// and its in-memory fan-out already sees every append. A nil channel blocks forever in a
// select, which is what a caller wants there.
func (s *Store) Listen(ctx context.Context) (<-chan Notification, error) {
	if !s.isPostgres() {
		return nil, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("store: listen: store is closed")
	}
	s.wg.Add(1)
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	stopWithStore := context.AfterFunc(s.bg, cancel)
	l, err := s.startListener(ctx)
	if err != nil {
		stopWithStore()
		cancel()
		s.wg.Done()
		return nil, err
	}
	out := make(chan Notification, notifyBuffer)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer stopWithStore()
		forward(ctx, l, out)
	}()
	return out, nil
}

// startListener connects a lib/pq listener and LISTENs on the events channel. lib/pq
// retries a refused connection forever, so reachability is checked first with a ping, and
// the blocking Listen call is abandoned (by closing the listener) when ctx ends.
func (s *Store) startListener(ctx context.Context) (*pq.Listener, error) {
	if err := s.db.PingContext(ctx); err != nil {
		return nil, errors.Join(errors.New("store: listen"), err)
	}
	l := pq.NewListener(s.dsn, listenMinReconnect, listenMaxReconnect, nil)
	done := make(chan error, 1)
	go func() {
		err := l.Listen(notifyChannel)
		if err == nil {
			err = l.Listen(cancelChannel)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			return l, nil
		}
		closeListener(l)
		return nil, errors.Join(errors.New("store: listen"), err)
	case <-ctx.Done():
		closeListener(l)
		<-done // Close unblocks Listen
		return nil, errors.Join(errors.New("store: listen"), ctx.Err())
	}
}

// forward moves notifications from l to out until ctx ends, then closes l and out. It owns
// a pinger goroutine and waits for it.
func forward(ctx context.Context, l *pq.Listener, out chan<- Notification) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { ping(ctx, l) })
	defer func() {
		cancel() // also when lib/pq closed Notify on its own
		closeListener(l)
		wg.Wait()
		close(out)
	}()

	var resync bool // a Resync is owed to the reader
	retry := time.NewTicker(resyncRetry)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-l.Notify:
			if !ok {
				return // the listener was closed under us
			}
			resync = deliver(out, toNotification(n), resync)
		case <-retry.C:
			if resync {
				resync = deliver(out, Notification{Resync: true}, resync)
			}
		}
	}
}

// deliver sends n without blocking and returns whether a Resync is still owed. An owed
// Resync goes first and stands for n too: a reader that re-reads the database after it sees
// the Resync finds what n announced, since n was sent after its rows committed.
func deliver(out chan<- Notification, n Notification, resync bool) bool {
	if resync || n.Resync {
		n = Notification{Resync: true}
	}
	select {
	case out <- n:
		return false
	default:
		return true // dropped; owe a Resync
	}
}

// toNotification parses "<message_id>:<seq>" (events) or "<message_id>" (cancels). A nil
// notification (lib/pq's signal that the
// connection was re-established) and a payload that does not parse both become a Resync.
func toNotification(n *pq.Notification) Notification {
	if n == nil {
		return Notification{Resync: true}
	}
	if n.Channel == cancelChannel {
		if n.Extra == "" {
			return Notification{Resync: true}
		}
		return Notification{MessageID: n.Extra, Cancel: true}
	}
	id, seqText, ok := cutLast(n.Extra, ":")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if !ok || err != nil || id == "" {
		return Notification{Resync: true}
	}
	return Notification{MessageID: id, Seq: seq}
}

// ping checks the LISTEN connection periodically until ctx ends. It runs apart from the
// forwarding loop: Ping waits for the server's answer, which lib/pq delivers on the same
// goroutine that feeds Notify, so pinging from the reader could deadlock with a full
// buffer.
func ping(ctx context.Context, l *pq.Listener) {
	t := time.NewTicker(listenPingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = l.Ping() // a failure makes lib/pq reconnect, which arrives as a Resync
		}
	}
}

// closeListener closes l and waits until lib/pq has closed its channel, so lib/pq's own
// goroutine has ended when it returns. The channel is drained while Close runs: Close waits
// for a Ping in flight, whose answer lib/pq may queue behind a notification nobody reads.
func closeListener(l *pq.Listener) {
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range l.Notify {
		}
	}()
	_ = l.Close()
	<-drained
}

// cutLast is strings.Cut at the last occurrence of sep (message ids contain no colon, but
// the seq is always last).
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
