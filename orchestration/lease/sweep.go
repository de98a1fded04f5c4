package lease

import (
	"context"
	"fmt"
)

// maySweep reports whether this replica has reached the database without a failure for a
// whole TTL (see the package rules): only then may it judge other replicas' leases.
func (k *Keeper) maySweep() bool {
	if _, failing := k.outageSince(); failing {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.now().Sub(k.lastFailure) >= k.cfg.TTL
}

// sweep claims and ends orphaned generations, a batch at a time, and returns how many it
// ended. A claimed generation that could not be ended is not renewed, so its new lease
// expires and a later sweep (here or elsewhere) tries again.
func (k *Keeper) sweep(ctx context.Context, all bool) (int, error) {
	ended := 0
	for {
		claimed, err := k.store.ClaimOrphans(ctx, k.Lease(), all, sweepBatch)
		if err != nil {
			return ended, fmt.Errorf("lease: sweep: %w", err)
		}
		for i := range claimed {
			m := &claimed[i]
			if err := k.end(ctx, m); err != nil {
				return ended, fmt.Errorf("lease: end orphan %s: %w", m.ID, err)
			}
			k.logger.Warn("ended a generation whose replica is gone", "message_id", m.ID, "last_event_id", m.LastEventID)
			ended++
		}
		if len(claimed) < sweepBatch {
			return ended, nil
		}
	}
}
