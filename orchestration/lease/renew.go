package lease

import (
	"context"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// renewTimeout bounds one renewal, so a hanging database is noticed within a period.
const renewTimeout = 5 * time.Second

// renew extends the leases of the turns running here and acts on the answer: a cancel flag
// stops its turn, a turn missing from the answer was lost and stops without writing more
// (unless it was ending: see Keeper.Ending).
func (k *Keeper) renew(ctx context.Context) {
	ids := k.runningIDs()
	if len(ids) == 0 {
		// No turn waits on a renewal, so none can be stopped by an outage: forget the one
		// in progress, else the next turn, started once the database is back, would be
		// stopped at once for an outage that began before it.
		k.mu.Lock()
		k.renewFailing = time.Time{}
		k.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, renewTimeout)
	defer cancel()
	states, err := k.store.RenewLeases(ctx, k.Lease(), ids)
	if err != nil {
		k.failed(err)
		k.logger.Warn("lease renewal failed", "turns", len(ids), "err", err)
		return
	}
	k.mu.Lock()
	k.renewFailing = time.Time{}
	k.mu.Unlock()
	held := make(map[string]bool, len(states))
	for _, st := range states {
		held[st.MessageID] = true
		if st.CancelRequested {
			k.stop(st.MessageID, ErrCancelled)
		}
	}
	for _, id := range ids {
		if !held[id] && k.lose(id) {
			k.logger.Warn("a turn running here lost its lease to another replica", "message_id", id)
		}
	}
}

func (k *Keeper) runningIDs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	ids := make([]string, 0, len(k.running))
	for id := range k.running {
		ids = append(ids, id)
	}
	return ids
}

// failed records that the database failed an operation of the keeper with err. Only an
// unreachable database counts: a statement it refused (a deadlock it broke, say) shows it
// is up, and the next tick tries again, so it neither starts the outage grace nor holds
// back the sweep.
func (k *Keeper) failed(err error) {
	if !store.IsUnavailable(err) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if k.renewFailing.IsZero() {
		k.renewFailing = now
	}
	k.lastFailure = now
}

// outageSince is when the current database outage began, as the keeper or the event log
// saw it, and false when there is none.
func (k *Keeper) outageSince() (time.Time, bool) {
	k.mu.Lock()
	since := k.renewFailing
	k.mu.Unlock()
	if t, failing := k.health.FailingSince(); failing && (since.IsZero() || t.Before(since)) {
		since = t
	}
	return since, !since.IsZero()
}

// enforceGrace stops every turn running here once an outage has lasted past the grace.
func (k *Keeper) enforceGrace() {
	since, failing := k.outageSince()
	if !failing {
		return
	}
	k.mu.Lock()
	k.lastFailure = k.now()
	k.mu.Unlock()
	if k.now().Sub(since) < k.cfg.OutageGrace {
		return
	}
	for _, id := range k.runningIDs() {
		if k.stop(id, ErrOutage) {
			k.logger.Warn("database unreachable past the outage grace; stopping the turn", "message_id", id, "since", since)
		}
	}
}
