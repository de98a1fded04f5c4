package orchestration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/genui"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/lease"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// Sentinel errors for expected states; the API maps them to HTTP statuses.
var (
	// ErrOverCapacity means the concurrent-turn limit is reached (503 with Retry-After).
	ErrOverCapacity = errors.New("orchestration: too many turns running")
	// ErrShuttingDown means the server no longer starts turns (503).
	ErrShuttingDown = errors.New("orchestration: shutting down")
	// ErrCancelled is the cause of a turn stopped by the cancel route (on any replica).
	ErrCancelled = lease.ErrCancelled
	// ErrInterrupted is the cause of a turn ended by server shutdown or a lost replica.
	ErrInterrupted = errors.New("interrupted: the server stopped before the reply was finished")
)

// Handlers finds the handler of a phase and applies the confirm route's rule.
type Handlers interface {
	prompt.Handlers
	ConfirmPhase() (phases.Phase, bool)
	Confirm(p phases.Phase, block handlers.Artifacts, strategyID string, advance bool) (handlers.Report, bool)
}

// Deps are the parts an orchestrator is built on.
type Deps struct {
	Store    Store
	Log      *eventlog.Log
	Upstream stream.Streamer
	Skills   handlers.Skills // the embedded texts; stored prompt versions override them
	Handlers Handlers
	Signer   prompt.Signer
	Logger   *slog.Logger
	// UserTurns bounds each user's generations; nil means no per-user bound.
	UserTurns UserTurns
	// GenUI checks each turn's cards against the schema; nil compiles it every turn.
	GenUI *genui.Validator
	// Metrics receives the turn metrics; nil reports nothing.
	Metrics Metrics
}

// Config holds the orchestrator's settings.
type Config struct {
	// LeaseTTL is how long a generation's claim holds without renewal (default 15s).
	LeaseTTL time.Duration
	// OutageGrace is how long turns wait out an unreachable database (default 30s).
	OutageGrace time.Duration
	// RecoverAll makes start-up recovery end every unfinished generation (SQLite, which
	// serves one process).
	RecoverAll bool

	Provider            string // provider shown until an endpoint answers ("openai", "scripted")
	Model               string
	EndpointID          int
	TurnTimeout         time.Duration // hard limit of one turn, all attempts included
	IdleTimeout         time.Duration // longest silence from the upstream
	MaxConcurrentTurns  int
	ReplyPolicy         stream.Policy
	SerpQueriesOptional bool
	HistoryMessages     int // earlier messages resent to the upstream (default 20)
	MaxOutputTokens     int
	// ChainResponses sends previous_response_id instead of the history (reset on a phase
	// change); only for upstreams that store responses.
	ChainResponses bool
	MCPServers     []prompt.MCPServer
	PhaseTurnLimit int // turns in a phase before the handler's nudge (default 12)
}

// Orchestrator is the ChatOrchestrator: it runs chat turns through their steps. Each turn
// runs in a goroutine the orchestrator owns and waits for in [Orchestrator.Shutdown]; no
// turn depends on a client connection.
type Orchestrator struct {
	cfg       Config
	store     Store
	log       *eventlog.Log
	core      *session.Core
	planner   *prompt.Planner
	streams   *stream.Handler
	texts     *prompt.Texts
	handlers  Handlers
	logger    *slog.Logger
	genui     *genui.Validator
	metrics   Metrics
	keeper    *lease.Keeper
	userTurns UserTurns // per-user limit: a turn holds one of its user's slots too

	slots   chan struct{} // concurrency limit: a turn holds one slot
	base    context.Context
	stopAll context.CancelCauseFunc

	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup // running turns

	stopKeeper context.CancelFunc
	keeperDone chan struct{}
}

// New returns an orchestrator over d.
func New(cfg Config, d Deps) *Orchestrator {
	cfg = cfg.withDefaults()
	if d.UserTurns == nil {
		d.UserTurns = noUserTurns{}
	}
	if d.Metrics == nil {
		d.Metrics = noMetrics{}
	}
	base, stopAll := context.WithCancelCause(context.Background())
	texts := prompt.NewTexts(d.Store, d.Skills)
	o := &Orchestrator{
		cfg: cfg, store: d.Store, log: d.Log, logger: d.Logger, texts: texts, handlers: d.Handlers,
		userTurns: d.UserTurns, genui: d.GenUI, metrics: d.Metrics,
		core: session.New(d.Store, initialBlocks(d.Handlers)),
		planner: prompt.NewPlanner(prompt.Config{
			Model: cfg.Model, MaxOutputTokens: cfg.MaxOutputTokens, HistoryMessages: cfg.HistoryMessages,
			TurnLimit: cfg.PhaseTurnLimit, ChainResponses: cfg.ChainResponses, MCPServers: cfg.MCPServers,
		}, d.Handlers, d.Store, d.Signer, texts),
		streams: stream.New(d.Upstream, cfg.IdleTimeout),
		slots:   make(chan struct{}, cfg.MaxConcurrentTurns),
		base:    base, stopAll: stopAll,
	}
	o.keeper = lease.New(lease.Config{
		Owner: d.Log.Owner(), TTL: cfg.LeaseTTL, OutageGrace: cfg.OutageGrace, RecoverAll: cfg.RecoverAll,
	}, d.Store, d.Log, o.endOrphan, d.Logger)
	return o
}

// initialBlocks gives every phase's block with its handler's initial values, for a new
// session (and to fill the gaps of an older one's).
func initialBlocks(h prompt.Handlers) func() session.Artifacts {
	return func() session.Artifacts {
		return prompt.FillBlocks(h, session.Artifacts{})
	}
}

func (c Config) withDefaults() Config {
	if c.MaxConcurrentTurns <= 0 {
		c.MaxConcurrentTurns = 64
	}
	if c.ReplyPolicy == "" {
		c.ReplyPolicy = stream.PolicyRetry
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 15 * time.Second
	}
	if c.OutageGrace <= 0 {
		c.OutageGrace = 30 * time.Second
	}
	return c
}

// Start recovers the generations that replicas gone before left unfinished, then starts
// the lease keeper (renewals, sweeps, the outage grace); [Orchestrator.Shutdown] stops it.
// Call it once, before serving.
func (o *Orchestrator) Start(ctx context.Context) (int, error) {
	n, err := o.keeper.Recover(ctx)
	if err != nil {
		return n, fmt.Errorf("orchestration: start-up recovery: %w", err)
	}
	kctx, stop := context.WithCancel(context.Background())
	o.stopKeeper, o.keeperDone = stop, make(chan struct{})
	go func() {
		defer close(o.keeperDone)
		o.keeper.Run(kctx)
	}()
	return n, nil
}

// Notified passes on a notification from the database (a cancel for a turn that may run
// here, or a resync after notifications were lost).
func (o *Orchestrator) Notified(n store.Notification) { o.keeper.Notified(n) }

// CreateSession makes a session for userID outside a turn (POST /sessions).
func (o *Orchestrator) CreateSession(ctx context.Context, userID, title, locale string) (*store.Session, error) {
	return o.core.CreateSession(ctx, userID, title, locale)
}

// Cancel stops the generation of messageID wherever it runs: the replica that owns it hears
// of it at once (or at its next lease renewal); the turn keeps its partial text and ends
// with an error event of code cancelled. Errors: store.ErrNotFound, and
// store.ErrMessageFinished when the generation has already ended.
func (o *Orchestrator) Cancel(ctx context.Context, messageID, userID string) error {
	if err := o.keeper.Cancel(ctx, messageID, userID); err != nil {
		return fmt.Errorf("orchestration: %w", err)
	}
	return nil
}

// Shutdown stops starting turns and waits for the running ones; when ctx ends first (the
// grace period), it interrupts them, each ending with an error event of code interrupted,
// and waits for them to write their tails. The lease keeper runs until then, so turns
// finishing during the grace keep their leases.
func (o *Orchestrator) Shutdown(ctx context.Context) {
	defer o.stopLeases()
	o.mu.Lock()
	o.closing = true
	o.mu.Unlock()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		o.logger.Warn("grace period over, interrupting running turns")
		o.stopAll(ErrInterrupted)
		<-done
	}
	o.stopAll(ErrInterrupted)
}

// stopLeases stops the keeper goroutine and waits for it.
func (o *Orchestrator) stopLeases() {
	if o.stopKeeper != nil {
		o.stopKeeper()
		<-o.keeperDone
	}
}

// acquire reserves a turn slot and one of userID's, and registers the HandleMessage call
// with the wait group (the turn's goroutine adds its own while the call holds this). The
// global slot is checked first, so a full server answers 503 whoever asks.
func (o *Orchestrator) acquire(userID string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closing {
		return ErrShuttingDown
	}
	select {
	case o.slots <- struct{}{}:
	default:
		return ErrOverCapacity
	}
	if err := o.userTurns.Acquire(userID); err != nil {
		<-o.slots
		return err
	}
	o.wg.Add(1)
	return nil
}

// freeSlot gives back one turn slot and one of userID's.
func (o *Orchestrator) freeSlot(userID string) {
	o.userTurns.Release(userID)
	<-o.slots
}
