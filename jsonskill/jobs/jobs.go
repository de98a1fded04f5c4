// Package jobs runs JSON-skill jobs: many inputs of one skill, stored first and run with
// bounded concurrency, surviving the replica that runs them (docs/json-skills.md).
//
// The rules are a turn's lease rules (docs/turn.md), for jobs:
//
//   - A job is stored with its inputs, queued. Any replica's [Runner] claims queued jobs,
//     and running jobs whose lease has expired (their replica died), up to a number at a
//     time; the replica that posted a job is kicked to claim it at once.
//   - The owner renews its jobs' leases every TTL/3; the answer carries cancel flags set
//     through any replica, and leaves out a job the owner lost.
//   - Each input's run is stored in the transaction that counts it done, fenced by
//     ownership and by the input not being done yet: an input finishes once, whoever ran
//     it. A replica that dies mid-input leaves that input pending; the next owner runs it.
//   - Cancel stops starting inputs; inputs already running finish. The job then ends
//     cancelled, or completed when nothing was left.
package jobs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/phaseflow/phaseflow/internal/workgroup"
	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/store"
)

// Store is what the job runner needs of persistence.
type Store interface {
	ClaimSkillJobs(ctx context.Context, lease store.Lease, limit int) ([]store.SkillJob, error)
	RenewSkillJobs(ctx context.Context, lease store.Lease, ids []string) (map[string]bool, error)
	PendingJobItems(ctx context.Context, id string) ([]store.JobItem, error)
	FinishJobItem(ctx context.Context, lease store.Lease, id string, idx int, run *store.SkillRun) (bool, error)
	EndSkillJob(ctx context.Context, lease store.Lease, id, status string) error
	ReleaseSkillJobs(ctx context.Context, lease store.Lease, ids []string) error
}

// Options are the runner's settings.
type Options struct {
	// Lease is this replica's claim: its id and how long a claim holds without renewal.
	Lease store.Lease
	// Concurrency is how many inputs of one job run at once (at least 1).
	Concurrency int
	// MaxJobs is how many jobs this replica runs at once; others wait, queued. 0 means
	// defaultMaxJobs.
	MaxJobs int
	Logger  *slog.Logger
}

// defaultMaxJobs is how many jobs a replica runs at once unless told otherwise: each runs
// Concurrency inputs, so a replica's share of the upstream stays bounded.
const defaultMaxJobs = 4

// writeTimeout bounds a store write of the runner's, so a database outage does not hold
// a job's goroutine for ever: the lease then expires and another replica takes the job.
const writeTimeout = 10 * time.Second

// Runner runs the jobs this replica claims. Start it once, Close it once.
type Runner struct {
	store  Store
	skills *jsonskill.Runner
	opts   Options
	log    *slog.Logger
	wake   chan struct{} // one pending kick; more are the same kick
	group  workgroup.Group

	mu      sync.Mutex
	running map[string]*job
	stop    context.CancelFunc // ends the claim loop and every job
}

// New returns a job runner over st that runs inputs with skills.
func New(st Store, skills *jsonskill.Runner, opts Options) *Runner {
	opts.Concurrency = max(opts.Concurrency, 1)
	if opts.MaxJobs <= 0 {
		opts.MaxJobs = defaultMaxJobs
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{store: st, skills: skills, opts: opts, log: opts.Logger, wake: make(chan struct{}, 1), running: map[string]*job{}}
}

// Start claims and runs jobs until ctx ends or Close is called.
func (r *Runner) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	r.stop = cancel
	r.mu.Unlock()
	if !r.group.Go(func() { r.loop(ctx) }) {
		cancel()
	}
}

// Kick makes the runner look for jobs now (a job was just posted here).
func (r *Runner) Kick() {
	select {
	case r.wake <- struct{}{}:
	default: // a kick is already pending
	}
}

// Cancel stops starting inputs of job id when it runs here (the cancel flag reaches other
// replicas at their next renewal).
func (r *Runner) Cancel(id string) {
	r.mu.Lock()
	j := r.running[id]
	r.mu.Unlock()
	if j != nil {
		j.cancel()
	}
}

// Close stops claiming, stops every job's inputs (those running are abandoned and run
// again by the job's next owner), waits for every goroutine, and releases the jobs it held
// so another replica takes them over at once.
func (r *Runner) Close() {
	r.mu.Lock()
	stop := r.stop
	held := make([]string, 0, len(r.running))
	for id, j := range r.running {
		held = append(held, id)
		j.stopNow()
	}
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
	r.group.Close()
	r.group.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := r.store.ReleaseSkillJobs(ctx, r.opts.Lease, held); err != nil {
		r.log.Warn("release skill jobs at shutdown; they are taken over when their leases expire", "err", err)
	}
}

// loop claims jobs and renews leases every TTL/3, or at once when kicked.
func (r *Runner) loop(ctx context.Context) {
	tick := time.NewTicker(max(r.opts.Lease.TTL/3, 10*time.Millisecond))
	defer tick.Stop()
	for {
		r.renew(ctx)
		r.claim(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.wake:
		}
	}
}

// claim takes queued and orphaned jobs up to MaxJobs and starts them.
func (r *Runner) claim(ctx context.Context) {
	r.mu.Lock()
	free := r.opts.MaxJobs - len(r.running)
	r.mu.Unlock()
	if free <= 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	claimed, err := r.store.ClaimSkillJobs(wctx, r.opts.Lease, free)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("claim skill jobs", "err", err)
		}
		return
	}
	for _, sj := range claimed {
		r.start(ctx, sj)
	}
}

// renew extends the leases of the jobs running here and applies what the answer says.
func (r *Runner) renew(ctx context.Context) {
	r.mu.Lock()
	ids := make([]string, 0, len(r.running))
	for id := range r.running {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	owned, err := r.store.RenewSkillJobs(wctx, r.opts.Lease, ids)
	if err != nil {
		r.log.Warn("renew skill job leases", "err", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		j := r.running[id]
		switch cancelled, ok := owned[id]; {
		case j == nil:
		case !ok:
			j.stopNow() // another replica has it
		case cancelled:
			j.cancel()
		}
	}
}

// start runs one claimed job on a goroutine of its own.
func (r *Runner) start(ctx context.Context, sj store.SkillJob) {
	jctx, stop := context.WithCancel(ctx)
	j := &job{SkillJob: sj, stop: stop}
	j.cancelled.Store(sj.CancelRequested)
	r.mu.Lock()
	r.running[sj.ID] = j
	r.mu.Unlock()
	if !r.group.Go(func() { r.run(jctx, j) }) {
		stop()
		r.forget(sj.ID)
	}
}

// forget drops a job that no longer runs here.
func (r *Runner) forget(id string) {
	r.mu.Lock()
	delete(r.running, id)
	r.mu.Unlock()
}

// run runs a job's pending inputs, then gives the job its end.
func (r *Runner) run(ctx context.Context, j *job) {
	defer r.forget(j.ID)
	defer j.stop()
	items, err := r.store.PendingJobItems(ctx, j.ID)
	if err != nil {
		r.log.Warn("read a skill job's inputs", "job_id", j.ID, "err", err)
		return // the lease expires and the job is claimed again
	}
	finished := r.runInputs(ctx, j, items)
	if ctx.Err() != nil {
		return // stopped (shutdown, or lost): the next owner finishes the job
	}
	r.end(ctx, j, len(items)-finished)
}

// runInputs runs items Concurrency at a time, starting none once the job is cancelled or
// stopped, and returns how many finished.
func (r *Runner) runInputs(ctx context.Context, j *job, items []store.JobItem) int {
	var (
		inputs   workgroup.Group
		slots    = make(chan struct{}, r.opts.Concurrency)
		finished atomic.Int64
	)
	for _, it := range items {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || j.cancelled.Load() {
			break
		}
		inputs.Go(func() {
			defer func() { <-slots }()
			if r.runItem(ctx, j, it) {
				finished.Add(1)
			}
		})
	}
	inputs.Close()
	inputs.Wait()
	return int(finished.Load())
}

// end gives a job its final status: completed when every input finished, else cancelled.
func (r *Runner) end(ctx context.Context, j *job, left int) {
	status := store.JobCompleted
	if left > 0 {
		status = store.JobCancelled
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := r.store.EndSkillJob(wctx, r.opts.Lease, j.ID, status); err != nil && !errors.Is(err, store.ErrJobLost) {
		r.log.Warn("end a skill job", "job_id", j.ID, "err", err)
	}
}

// runItem runs one input and stores its run with the job's count; it reports whether the
// input is now finished (here or, before, elsewhere).
func (r *Runner) runItem(ctx context.Context, j *job, it store.JobItem) bool {
	run, err := r.execute(ctx, j, it)
	if err != nil {
		return false // ctx ended: the input stays pending
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	_, err = r.store.FinishJobItem(wctx, r.opts.Lease, j.ID, it.Index, run)
	switch {
	case errors.Is(err, store.ErrJobLost):
		j.stopNow()
		return false
	case err != nil:
		r.log.Warn("store a skill job's run", "job_id", j.ID, "input", it.Index, "err", err)
		j.stopNow() // the lease lapses and another owner runs the input again
		return false
	}
	return true
}

// execute runs one input. An input that no longer passes its schema (the skill changed
// since the job was posted) is a failed run, not a stuck job.
func (r *Runner) execute(ctx context.Context, j *job, it store.JobItem) (*store.SkillRun, error) {
	req := jsonskill.Request{UserID: j.UserID, Skill: j.Skill, Locale: j.Locale}
	sk, err := r.skills.Catalog().Get(j.Skill)
	if err != nil {
		return r.skills.Refused(req, it.Input, err), nil
	}
	in, err := sk.CheckInput([]byte(it.Input))
	if err != nil {
		return r.skills.Refused(req, it.Input, err), nil
	}
	return r.skills.Execute(ctx, sk, req, in)
}

// job is a job running here.
type job struct {
	store.SkillJob
	stop      context.CancelFunc
	cancelled atomic.Bool
}

// cancel stops starting inputs; those running finish.
func (j *job) cancel() { j.cancelled.Store(true) }

// stopNow stops the job at once: its running inputs are abandoned, not stored.
func (j *job) stopNow() { j.stop() }
