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
	"github.com/phaseflow/phaseflow/internal/workgroup"
	"github.com/phaseflow/phaseflow/orchestration/admission"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/finish"
	"github.com/phaseflow/phaseflow/orchestration/lease"
	"github.com/phaseflow/phaseflow/orchestration/manual"
	"github.com/phaseflow/phaseflow/orchestration/orphan"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/report"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/store"
)

// Sentinel errors for expected states; the API maps them to HTTP statuses.
var (
	// ErrOverCapacity means the concurrent-turn limit is reached (503 with Retry-After).
	ErrOverCapacity = admission.ErrOverCapacity
	// ErrShuttingDown means the server no longer starts turns (503).
	ErrShuttingDown = errors.New("orchestration: shutting down")
	// ErrCancelled is the cause of a turn stopped by the cancel route (on any replica).
	ErrCancelled = lease.ErrCancelled
	// ErrInterrupted is the cause of a turn ended by server shutdown or a lost replica.
	ErrInterrupted = finish.ErrInterrupted
)

// Handlers finds the handler of a phase and applies the confirm route's rule.
type Handlers = manual.Handlers

// UserTurns bounds the generations one user runs at once (package userlimit).
type UserTurns = admission.Users

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
	Limits              stream.Limits // a turn's reply bytes and events
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
	cfg      Config
	store    Store
	log      *eventlog.Log
	core     *session.Core
	planner  *prompt.Planner
	streams  *stream.Handler
	texts    *prompt.Texts
	handlers Handlers
	logger   *slog.Logger
	genui    *genui.Validator
	metrics  Metrics
	report   *report.Reporter
	keeper   *lease.Keeper
	manual   *manual.Routes
	limits   *admission.Limits // a turn holds a slot of the server's and one of its user's

	base    context.Context
	stopAll context.CancelCauseFunc

	keepers workgroup.Group // the lease keeper, and Shutdown's waiter

	mu      sync.Mutex
	closing bool
	// turns owns the running turns' goroutines (and, as a member, each HandleMessage that
	// may start one).
	turns workgroup.Group

	stopKeeper context.CancelFunc
}

// New returns an orchestrator over d.
func New(cfg Config, d Deps) *Orchestrator {
	cfg = cfg.withDefaults()
	if d.Metrics == nil {
		d.Metrics = report.Discard()
	}
	base, stopAll := context.WithCancelCause(context.Background())
	texts := prompt.NewTexts(d.Store, d.Skills)
	o := &Orchestrator{
		cfg: cfg, store: d.Store, log: d.Log, logger: d.Logger, texts: texts, handlers: d.Handlers,
		genui: d.GenUI, metrics: d.Metrics, limits: admission.New(cfg.MaxConcurrentTurns, d.UserTurns),
		core: session.New(d.Store, prompt.InitialBlocks(d.Handlers)),
		planner: prompt.NewPlanner(prompt.Config{
			Model: cfg.Model, MaxOutputTokens: cfg.MaxOutputTokens, HistoryMessages: cfg.HistoryMessages,
			TurnLimit: cfg.PhaseTurnLimit, ChainResponses: cfg.ChainResponses, MCPServers: cfg.MCPServers,
			ReplyPolicy: cfg.ReplyPolicy, SerpQueriesOptional: cfg.SerpQueriesOptional,
		}, d.Handlers, d.Store, d.Signer, texts),
		streams: stream.New(d.Upstream, cfg.IdleTimeout, cfg.Limits),
		manual:  manual.New(d.Store, d.Handlers, texts, d.Metrics.PhaseMoved),
		report:  report.New(d.Logger, d.Metrics, mcpLabels(cfg.MCPServers)),
		base:    base, stopAll: stopAll,
	}
	o.keeper = lease.New(lease.Config{
		Owner: d.Log.Owner(), TTL: cfg.LeaseTTL, OutageGrace: cfg.OutageGrace, RecoverAll: cfg.RecoverAll,
	}, d.Store, d.Log, orphan.New(d.Log, d.Store, texts, o.route(), d.Logger).End, d.Logger)
	return o
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
	o.stopKeeper = stop
	o.keepers.Go(func() { o.keeper.Run(kctx) })
	return n, nil
}

// Notified passes on a notification from the database (a cancel for a turn that may run
// here, or a resync after notifications were lost).
func (o *Orchestrator) Notified(n store.Notification) { o.keeper.Notified(n) }

// CreateSession makes a session for userID outside a turn (POST /sessions).
func (o *Orchestrator) CreateSession(ctx context.Context, userID, title, locale string) (*store.Session, error) {
	return o.core.CreateSession(ctx, userID, title, locale)
}

// OpenConversation returns the session of userID's conversation name (a chat a client of
// another protocol names itself; see session.ConversationID), made in locale the first
// time.
func (o *Orchestrator) OpenConversation(ctx context.Context, userID, name, locale string) (*store.Session, error) {
	sess, err := o.core.OpenConversation(ctx, userID, name, locale)
	if err != nil {
		return nil, fmt.Errorf("orchestration: %w", err)
	}
	return sess, nil
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
	o.keepers.Go(func() { o.turns.Wait(); close(done) })
	select {
	case <-done:
	case <-ctx.Done():
		o.logger.Warn("grace period over, interrupting running turns")
		o.stopAll(ErrInterrupted)
		<-done
	}
	o.turns.Close()
	o.stopAll(ErrInterrupted)
}

// stopLeases stops the keeper goroutine and waits for it (and the waiter above).
func (o *Orchestrator) stopLeases() {
	if o.stopKeeper != nil {
		o.stopKeeper()
	}
	o.keepers.Close()
	o.keepers.Wait()
}

// MovePhase serves the manual phase route (package manual).
func (o *Orchestrator) MovePhase(ctx context.Context, userID, sessionID, to, reason string) (*store.Session, error) {
	return o.manual.MovePhase(ctx, userID, sessionID, to, reason)
}

// Confirmation is the confirm route's answer: the strategy and its stop criteria.
type Confirmation = manual.Confirmation

// ConfirmStrategy serves the confirm route (package manual).
func (o *Orchestrator) ConfirmStrategy(ctx context.Context, userID, strategyID string, advance bool) (*manual.Confirmation, error) {
	return o.manual.ConfirmStrategy(ctx, userID, strategyID, advance)
}

// acquire reserves a turn's slots (admission) and enters the HandleMessage call in the
// turns' group, so the group is not waited out before the turn it may start has started
// (release ends that).
func (o *Orchestrator) acquire(ctx context.Context, userID string) error {
	elsewhere, err := o.limits.Elsewhere(ctx, userID, func(ctx context.Context) (int, error) {
		return o.store.RunningElsewhere(ctx, userID, o.keeper.Lease().Owner)
	})
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closing || !o.turns.Enter() {
		return ErrShuttingDown
	}
	if err := o.limits.Acquire(userID, elsewhere); err != nil {
		o.turns.Leave()
		return err
	}
	return nil
}

// release ends acquire's membership of the turns' group.
func (o *Orchestrator) release() { o.turns.Leave() }

// mcpLabels are the configured MCP servers' labels.
func mcpLabels(servers []prompt.MCPServer) []string {
	labels := make([]string, len(servers))
	for i, s := range servers {
		labels[i] = s.Label
	}
	return labels
}
