package orchestration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
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
	// ErrCancelled is the cause of a turn stopped by the cancel route.
	ErrCancelled = errors.New("cancelled by the user")
	// ErrInterrupted is the cause of a turn ended by server shutdown or a lost replica.
	ErrInterrupted = errors.New("interrupted: the server stopped before the reply was finished")
)

// Store is what the orchestrator needs of persistence.
type Store interface {
	session.Store
	LatestMessages(ctx context.Context, sessionID string, n int) ([]store.Message, error)
	ListMessages(ctx context.Context, sessionID, userID string) ([]store.Message, error)
	FinishMessage(ctx context.Context, m *store.Message) error
	SetMessageStatus(ctx context.Context, id, status string) error
	ListUnfinishedMessages(ctx context.Context) ([]store.Message, error)
	ListEvents(ctx context.Context, messageID string, afterSeq int64, limit int) ([]store.Event, error)
	InsertMCPCalls(ctx context.Context, calls []store.MCPCall) error
	MovePhase(ctx context.Context, s *store.Session, t *store.Transition) error
	UpsertStrategy(ctx context.Context, s *store.Strategy) error
	GetStrategy(ctx context.Context, id, userID string) (*store.Strategy, error)
	LatestStrategy(ctx context.Context, sessionID, userID string) (*store.Strategy, error)
	ActivePrompt(ctx context.Context, name, locale string) (*store.Prompt, error)
}

// Handlers finds the handler of a phase.
type Handlers interface {
	For(p phases.Phase) (handlers.Handler, bool)
}

// ContextSigner signs the x-mcp-context token each configured MCP server receives.
type ContextSigner interface {
	SignMCPContext(mc auth.MCPContext, audience string, ttl time.Duration) (string, error)
}

// MCPServer is an MCP server the model may call through the upstream.
type MCPServer struct{ Label, URL string }

// Deps are the parts an orchestrator is built on.
type Deps struct {
	Store    Store
	Log      *eventlog.Log
	Upstream stream.Streamer
	Skills   prompt.Skills // the embedded texts; stored prompt versions override them
	Handlers Handlers
	Signer   ContextSigner
	Logger   *slog.Logger
}

// Reply policies: what to do with a reply that fails validation or the language check.
const (
	PolicyRetry  = "retry"  // ask once more with a correction note; fail the turn if it fails again
	PolicyReport = "report" // keep the reply, record the findings, apply nothing from it
	PolicyOff    = "off"    // do not check replies at all
)

// Config holds the orchestrator's settings.
type Config struct {
	Provider            string // provider name shown to clients ("openai", "scripted")
	Model               string
	EndpointID          int
	TurnTimeout         time.Duration // hard limit of one turn, all attempts included
	IdleTimeout         time.Duration // longest silence from the upstream
	MaxConcurrentTurns  int
	ReplyPolicy         string
	SerpQueriesOptional bool
	HistoryMessages     int // earlier messages resent to the upstream (default 20)
	MaxOutputTokens     int
	// ChainResponses sends previous_response_id instead of the history (reset on a phase
	// change); only for upstreams that store responses.
	ChainResponses bool
	MCPServers     []MCPServer
	PhaseTurnLimit int // turns in a phase before the handler's nudge (default 12)
}

// Orchestrator runs chat turns. Each turn runs in a goroutine the orchestrator owns and
// waits for in [Orchestrator.Shutdown]; no turn depends on a client connection.
type Orchestrator struct {
	cfg      Config
	store    Store
	log      *eventlog.Log
	core     *session.Core
	prompts  *prompt.Builder
	streams  *stream.Handler
	skills   prompt.Skills
	handlers Handlers
	signer   ContextSigner
	logger   *slog.Logger

	slots   chan struct{} // concurrency limit: a turn holds one slot
	base    context.Context
	stopAll context.CancelCauseFunc

	mu      sync.Mutex
	closing bool
	running map[string]context.CancelCauseFunc // message id → cancel
	wg      sync.WaitGroup
}

// New returns an orchestrator over d.
func New(cfg Config, d Deps) *Orchestrator {
	if cfg.MaxConcurrentTurns <= 0 {
		cfg.MaxConcurrentTurns = 64
	}
	if cfg.HistoryMessages <= 0 {
		cfg.HistoryMessages = 20
	}
	if cfg.ReplyPolicy == "" {
		cfg.ReplyPolicy = PolicyRetry
	}
	if cfg.PhaseTurnLimit <= 0 {
		cfg.PhaseTurnLimit = 12
	}
	base, stopAll := context.WithCancelCause(context.Background())
	return &Orchestrator{
		cfg: cfg, store: d.Store, log: d.Log, logger: d.Logger,
		skills: d.Skills, handlers: d.Handlers, signer: d.Signer,
		core:    session.New(d.Store),
		prompts: prompt.New(cfg.Model, cfg.MaxOutputTokens),
		streams: stream.New(d.Upstream, cfg.IdleTimeout),
		slots:   make(chan struct{}, cfg.MaxConcurrentTurns),
		base:    base, stopAll: stopAll,
		running: make(map[string]context.CancelCauseFunc),
	}
}

// Sessions gives the API the session core, for creating sessions outside a turn.
func (o *Orchestrator) Sessions() *session.Core { return o.core }

// Cancel stops the generation of messageID if it runs here; the turn keeps its partial text
// and ends with an error event of code cancelled. Cancelling a finished message is a no-op.
func (o *Orchestrator) Cancel(ctx context.Context, messageID, userID string) error {
	if _, err := o.store.GetMessage(ctx, messageID, userID); err != nil {
		return fmt.Errorf("orchestration: cancel: %w", err)
	}
	o.mu.Lock()
	cancel, ok := o.running[messageID]
	o.mu.Unlock()
	if ok {
		cancel(ErrCancelled)
	}
	return nil
}

// Shutdown stops starting turns and waits for the running ones; when ctx ends first (the
// grace period), it interrupts them, each ending with an error event of code interrupted,
// and waits for them to write their tails.
func (o *Orchestrator) Shutdown(ctx context.Context) {
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

// acquire reserves a turn slot and registers the turn's goroutine with the wait group.
func (o *Orchestrator) acquire() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closing {
		return ErrShuttingDown
	}
	select {
	case o.slots <- struct{}{}:
		o.wg.Add(1)
		return nil
	default:
		return ErrOverCapacity
	}
}

// release gives back a slot and the wait-group count of a turn that never started.
func (o *Orchestrator) release() {
	o.freeSlot()
	o.wg.Done()
}

// freeSlot gives back one turn slot.
func (o *Orchestrator) freeSlot() { <-o.slots }

func (o *Orchestrator) register(messageID string, cancel context.CancelCauseFunc) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.running[messageID] = cancel
}

func (o *Orchestrator) unregister(messageID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.running, messageID)
}
