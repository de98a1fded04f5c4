package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lib/pq"
)

// cancelChannel is the PostgreSQL channel RequestCancel notifies (payload: the message id),
// so the replica that owns a generation hears of a cancel received by another one.
const cancelChannel = "phaseflow_cancel"

// runningAssistant is the condition of a generation that has not ended.
const runningAssistant = `role = 'assistant' AND status IN ('pending', 'streaming')`

// runningAssistantM is runningAssistant of the messages row named m, for the statements
// that fence a write by it beside rows with a status of their own; role included, so that
// it matches the partial index of the owner's running messages.
const runningAssistantM = `m.role = 'assistant' AND m.status IN ('pending', 'streaming')`

// leaseUntil returns the SQL expression and arguments for "ttl from now" in the database's
// clock (PostgreSQL), so replicas never compare their own clocks; SQLite serves one process,
// whose clock is the only one. A zero ttl means no lease (NULL): the message is unowned.
func (s *Store) leaseUntil(ttl time.Duration) (string, []any) {
	switch {
	case ttl <= 0:
		return `NULL`, nil
	case s.isPostgres():
		return `now() + make_interval(secs => ?)`, []any{ttl.Seconds()}
	default:
		return `?`, []any{now().Add(ttl)}
	}
}

// leaseExpired is the SQL condition of a lease that has run out (or never existed).
func (s *Store) leaseExpired() (string, []any) {
	if s.isPostgres() {
		return `(lease_until IS NULL OR lease_until < now())`, nil
	}
	return `(lease_until IS NULL OR lease_until < ?)`, []any{now()}
}

// RenewLeases extends lease.Owner's claim on the generations ids (the turns it is actually
// running) to lease.TTL from now, and returns those it still owns, with their cancel flags.
// A generation missing from the answer was taken over (or ended) elsewhere: the owner must
// stop it without writing anything more. Generations the owner holds but no longer runs
// (say its turn died) are left to expire, so a sweep ends them.
func (s *Store) RenewLeases(ctx context.Context, lease Lease, ids []string) ([]LeaseState, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	until, untilArgs := s.leaseUntil(lease.TTL)
	var q string
	var args []any
	if s.isPostgres() {
		// The rows are locked in id order, as the event log's commits lock them (see
		// byMessageID): two statements locking the same rows in different orders can
		// deadlock, and PostgreSQL breaks a deadlock only after deadlock_timeout (1 s).
		q = `WITH l AS (SELECT id FROM messages WHERE owner = ? AND id = ANY(?) AND ` + runningAssistant + `
			ORDER BY id FOR UPDATE)
		UPDATE messages m SET lease_until = ` + until + ` FROM l WHERE m.id = l.id RETURNING m.id, m.cancel_requested`
		args = append([]any{lease.Owner, pq.Array(ids)}, untilArgs...)
	} else {
		// One writer at a time on SQLite: no order to keep.
		q = `UPDATE messages SET lease_until = ` + until + `
			WHERE owner = ? AND id IN (?` + strings.Repeat(`, ?`, len(ids)-1) + `) AND ` + runningAssistant + `
			RETURNING id, cancel_requested`
		args = append(untilArgs, lease.Owner)
		for _, id := range ids {
			args = append(args, id)
		}
	}
	var out []LeaseState
	err := s.db.SelectContext(ctx, &out, s.db.Rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("store: renew leases: %w", err)
	}
	return out, nil
}

// ClaimOrphans takes over up to limit running generations whose lease has expired (or,
// with all, every running generation: SQLite's start-up recovery, where the one process
// that could own them is this one), claiming them for lease, and returns them oldest first
// with their last_event_id. The claim is atomic: two replicas never claim the same message,
// and the old owner, if it still lives, finds its writes fenced off (see CommitEvents). The
// caller then ends each claimed generation itself, like any generation it owns.
func (s *Store) ClaimOrphans(ctx context.Context, lease Lease, all bool, limit int) ([]Message, error) {
	until, args := s.leaseUntil(lease.TTL)
	args = append(args, lease.Owner)
	expired, expiredArgs := `TRUE`, []any(nil)
	if !all {
		expired, expiredArgs = s.leaseExpired()
	}
	args = append(append(args, expiredArgs...), limit)
	pick := `SELECT id FROM messages WHERE ` + runningAssistant + ` AND ` + expired + `
		ORDER BY created_at, id LIMIT ?`
	if s.isPostgres() {
		pick += ` FOR UPDATE SKIP LOCKED`
	}
	var out []Message
	err := s.db.SelectContext(ctx, &out, s.db.Rebind(`UPDATE messages SET lease_until = `+until+`, owner = ?
		WHERE id IN (`+pick+`) RETURNING `+messageColumns), args...)
	if err != nil {
		return nil, fmt.Errorf("store: claim orphans: %w", err)
	}
	for i := range out {
		out[i].utc()
	}
	sortMessages(out)
	return out, nil
}

// RequestCancel records that userID wants the generation of message id stopped, and on
// PostgreSQL notifies every replica, so the owner stops it wherever the cancel arrived. It
// returns the owner's replica id. Errors: ErrNotFound when the message is not userID's
// assistant message, ErrMessageFinished when its generation has already ended.
func (s *Store) RequestCancel(ctx context.Context, id, userID string) (string, error) {
	q := `UPDATE messages SET cancel_requested = ? WHERE id = ? AND user_id = ? AND ` + runningAssistant + ` RETURNING owner`
	if s.isPostgres() {
		// One notification per updated row: none when the message was not running.
		q = `WITH c AS (` + q + `, id) SELECT c.owner FROM c, LATERAL (SELECT pg_notify('` + cancelChannel + `', c.id)) AS n`
	}
	var owners []string
	if err := s.db.SelectContext(ctx, &owners, s.db.Rebind(q), true, id, userID); err != nil {
		return "", fmt.Errorf("store: request cancel: %w", err)
	}
	if len(owners) == 1 {
		return owners[0], nil
	}
	m, err := s.GetMessage(ctx, id, userID)
	switch {
	case err != nil:
		return "", err
	case m.Role != RoleAssistant:
		return "", ErrNotFound
	}
	return "", ErrMessageFinished
}

// sortMessages orders messages by creation time, then id (RETURNING has no order).
func sortMessages(ms []Message) {
	slices.SortFunc(ms, func(a, b Message) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
}
