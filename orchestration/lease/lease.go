// Package lease keeps this replica's claim on the generations it runs, so several replicas
// can share one database safely (docs/turn.md, docs/api.md).
//
// The rules:
//
//   - Every process has its own replica id. A generation is created owned by the replica
//     that runs it, with a lease: a time in the database's clock until which the claim holds.
//   - The owner renews the leases of the turns it is actually running every TTL/3, in one
//     statement. The answer also carries the cancel flags set through other replicas, and
//     leaves out any generation the owner lost: that turn is stopped without writing more.
//     A turn that has handed its terminal event over is left out once that commits, and
//     is not taken for lost ([Keeper.Ending]).
//   - Every replica sweeps every TTL/3: a running generation whose lease has expired is
//     claimed (atomically, so one replica wins) and ended with an `interrupted` error event
//     after its last committed event, keeping its partial text. A live turn is never touched:
//     its lease does not expire while its owner can reach the database. So a dead replica's
//     turns end within the TTL plus one sweep, its sessions unlock, and followers anywhere
//     get the terminal event. Start-up recovery is the same sweep, run once before serving.
//   - Writes of the old owner are fenced by the message row (store.CommitEvents), so even an
//     owner that was only cut off, and comes back, cannot add to a log another replica ended.
//   - A replica sweeps only after it has reached the database without a failure for a whole
//     TTL: after an outage every owner first gets the chance to renew, so an outage shorter
//     than the grace does not cost live turns their leases.
//   - While the database is unreachable for longer than the outage grace, every turn running
//     here is stopped with [ErrOutage]; it ends `interrupted` as soon as its terminal event
//     can be written, here or by another replica's sweep.
//   - A cancel received by any replica sets the message's cancel flag and notifies all
//     replicas (PostgreSQL NOTIFY); the owner stops the turn at once, or at its next renewal
//     if the notification was lost.
//
// SQLite serves one process, so there every unfinished generation found at start-up is an
// orphan and is ended at once (Config.RecoverAll).
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// Causes a running turn is stopped with; the orchestrator maps them to its outcome.
var (
	// ErrCancelled stops a turn whose cancel was requested (through any replica).
	ErrCancelled = errors.New("cancelled by the user")
	// ErrLost stops a turn another replica took over: it must write nothing more.
	ErrLost = errors.New("another replica took the generation over")
	// ErrOutage stops a turn when the database stayed unreachable past the outage grace.
	ErrOutage = errors.New("interrupted: the database was unreachable for longer than the outage grace")
)

// sweepBatch bounds the generations claimed per sweep statement.
const sweepBatch = 16

// Store is what the keeper needs of persistence.
type Store interface {
	RenewLeases(ctx context.Context, lease store.Lease, ids []string) ([]store.LeaseState, error)
	ClaimOrphans(ctx context.Context, lease store.Lease, all bool, limit int) ([]store.Message, error)
	RequestCancel(ctx context.Context, id, userID string) (string, error)
}

// Health reports database trouble seen elsewhere (the event log's commits).
type Health interface {
	FailingSince() (time.Time, bool)
}

// EndFunc ends a generation this replica has just claimed (interrupted, partial text kept).
type EndFunc func(ctx context.Context, m *store.Message) error

// Config holds the keeper's settings.
type Config struct {
	Owner       string        // this replica's id
	TTL         time.Duration // how long a claim holds without renewal
	OutageGrace time.Duration // how long turns wait out an unreachable database
	// RecoverAll makes start-up recovery end every unfinished generation, whatever its
	// lease (SQLite: one process, which is this one).
	RecoverAll bool
}

// Keeper renews, sweeps and relays cancels for one replica. Create it with [New], run
// [Keeper.Run] in a goroutine its owner waits for, and register each turn with [Keeper.Track].
type Keeper struct {
	cfg    Config
	store  Store
	health Health
	end    EndFunc
	logger *slog.Logger
	now    func() time.Time

	check chan struct{} // capacity 1: renew now (notifications may have been lost)

	mu           sync.Mutex
	running      map[string]*tracked
	renewFailing time.Time // first failed renewal of the current outage; zero when fine
	lastFailure  time.Time // when the database last failed us, for the sweep rule
}

// New returns a keeper; end is how claimed orphans are ended.
func New(cfg Config, st Store, health Health, end EndFunc, logger *slog.Logger) *Keeper {
	return &Keeper{
		cfg: cfg, store: st, health: health, end: end, logger: logger, now: time.Now,
		check: make(chan struct{}, 1), running: make(map[string]*tracked),
		lastFailure: time.Now(), // a new replica waits one TTL before its first periodic sweep
	}
}

// Lease is the claim new generations of this replica are created with.
func (k *Keeper) Lease() store.Lease { return store.Lease{Owner: k.cfg.Owner, TTL: k.cfg.TTL} }

// tracked is a turn running here.
type tracked struct {
	cancel context.CancelCauseFunc
	ending bool // its terminal event is handed over (Ending)
}

// Track registers a turn running here under messageID; cancel stops it with a cause.
func (k *Keeper) Track(messageID string, cancel context.CancelCauseFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.running[messageID] = &tracked{cancel: cancel}
}

// Ending marks the turn running here under messageID as handing its terminal event to the
// event log. Its lease is still renewed until [Keeper.Untrack] (the terminal may have to
// wait out a database outage), but a renewal that no longer finds it running is no longer
// a loss: its terminal was committed between the renewal's list and its statement (under
// load that is common, and such turns were stopped and logged as lost to another replica,
// where there is none). Were it lost after all, its
// terminal's commit is fenced off, and the event log says so and stops it.
func (k *Keeper) Ending(messageID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if tr, ok := k.running[messageID]; ok {
		tr.ending = true
	}
}

// Untrack forgets a turn that has ended; its lease is no longer renewed.
func (k *Keeper) Untrack(messageID string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.running, messageID)
}

// stop stops the turn running here under messageID, if any, with cause.
func (k *Keeper) stop(messageID string, cause error) bool {
	k.mu.Lock()
	tr, ok := k.running[messageID]
	k.mu.Unlock()
	if ok {
		tr.cancel(cause)
	}
	return ok
}

// lose stops, with ErrLost, the turn running here under messageID that a renewal no longer
// found running, and reports whether it did: not when the turn is gone or ending.
func (k *Keeper) lose(messageID string) bool {
	k.mu.Lock()
	tr, ok := k.running[messageID]
	ok = ok && !tr.ending
	k.mu.Unlock()
	if !ok {
		return false
	}
	tr.cancel(ErrLost)
	return true
}

// Cancel asks for the generation of messageID to stop, wherever it runs. Errors:
// store.ErrNotFound (not the user's), store.ErrMessageFinished (nothing left to stop).
func (k *Keeper) Cancel(ctx context.Context, messageID, userID string) error {
	owner, err := k.store.RequestCancel(ctx, messageID, userID)
	if err != nil {
		return fmt.Errorf("lease: cancel: %w", err)
	}
	if owner == k.cfg.Owner {
		k.stop(messageID, ErrCancelled)
	}
	return nil
}

// Notified handles a notification from another replica (or this one): a cancel stops the
// turn if it runs here; a resync makes the keeper re-read its cancel flags at once.
func (k *Keeper) Notified(n store.Notification) {
	switch {
	case n.Cancel:
		k.stop(n.MessageID, ErrCancelled)
	case n.Resync:
		select {
		case k.check <- struct{}{}:
		default:
		}
	}
}

// Recover is start-up recovery: it ends the generations left unfinished by replicas that
// are gone (leases expired; with RecoverAll, every one) and returns how many it ended.
func (k *Keeper) Recover(ctx context.Context) (int, error) {
	return k.sweep(ctx, k.cfg.RecoverAll)
}

// Run renews, sweeps and enforces the outage grace until ctx ends.
func (k *Keeper) Run(ctx context.Context) {
	period := max(k.cfg.TTL/3, 50*time.Millisecond)
	renew := time.NewTicker(period)
	defer renew.Stop()
	grace := time.NewTicker(min(max(k.cfg.OutageGrace/10, 50*time.Millisecond), time.Second))
	defer grace.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-renew.C:
			k.renew(ctx)
			if k.maySweep() {
				if _, err := k.sweep(ctx, false); err != nil {
					k.failed(err)
					k.logger.Warn("lease sweep failed", "err", err)
				}
			}
		case <-k.check:
			k.renew(ctx)
		case <-grace.C:
			k.enforceGrace()
		}
	}
}
