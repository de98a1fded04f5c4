package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
)

// Orchestrator is the chat orchestrator as the API uses it.
type Orchestrator interface {
	HandleMessage(ctx context.Context, req session.Request) (*orchestration.Turn, error)
	Cancel(ctx context.Context, messageID, userID string) error
	MovePhase(ctx context.Context, userID, sessionID, to, reason string) (*store.Session, error)
	ConfirmStrategy(ctx context.Context, userID, strategyID string, advance bool) (*store.Strategy, error)
}

// SessionMaker creates sessions outside a turn (POST /sessions).
type SessionMaker interface {
	CreateSession(ctx context.Context, userID, title, locale string) (*store.Session, error)
}

// Store is what the API reads directly.
type Store interface {
	GetSession(ctx context.Context, id, userID string) (*store.Session, error)
	ListSessions(ctx context.Context, userID string) ([]store.Session, error)
	GetMessage(ctx context.Context, id, userID string) (*store.Message, error)
	ListMessages(ctx context.Context, sessionID, userID string) ([]store.Message, error)
	ListTransitions(ctx context.Context, sessionID, userID string) ([]store.Transition, error)
	GetStrategy(ctx context.Context, id, userID string) (*store.Strategy, error)
	CreatePrompt(ctx context.Context, p *store.Prompt) error
	ListPrompts(ctx context.Context) ([]store.Prompt, error)
	ActivatePrompt(ctx context.Context, id string) (*store.Prompt, error)
	Ping(ctx context.Context) error
}

// EventLog is where the event streams are read from.
type EventLog interface {
	Follow(messageID string, after int64) *eventlog.Cursor
}

// Config holds the API's settings.
type Config struct {
	HeartbeatInterval   time.Duration
	MaxBodyBytes        int64
	SerpQueriesOptional bool
}

// Deps are the parts the API is built on.
type Deps struct {
	Config       Config
	Auth         *auth.Authority
	Orchestrator Orchestrator
	Sessions     SessionMaker
	Store        Store
	Log          EventLog
	Metrics      *Metrics
	Logger       *slog.Logger
}

// Server is the HTTP API.
type Server struct {
	cfg      Config
	auth     *auth.Authority
	orch     Orchestrator
	sessions SessionMaker
	store    Store
	log      EventLog
	metrics  *Metrics
	logger   *slog.Logger
	echo     *echo.Echo

	// streamsDone is closed by [Server.EndStreams] so open event streams end at shutdown.
	streamsDone chan struct{}
}

// New builds the server and its routes.
func New(d Deps) *Server {
	if d.Config.HeartbeatInterval <= 0 {
		d.Config.HeartbeatInterval = 15 * time.Second
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics()
	}
	s := &Server{
		cfg: d.Config, auth: d.Auth, orch: d.Orchestrator, sessions: d.Sessions, store: d.Store,
		log: d.Log, metrics: d.Metrics, logger: d.Logger, streamsDone: make(chan struct{}),
	}
	s.echo = s.routes()
	return s
}

// Handler is the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

// EndStreams ends every open event stream (at shutdown, after the running turns finished or
// were interrupted, so clients have seen their terminal events).
func (s *Server) EndStreams() { close(s.streamsDone) }

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(s.logger)
	e.Use(requestIDMiddleware(), logMiddleware(s.logger), s.metrics.middleware(), bodyLimitMiddleware(s.cfg.MaxBodyBytes))

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.metrics.serve)
	e.GET("/api/v1/openapi.yaml", serveOpenAPI)

	v1 := e.Group("/api/v1")
	v1.GET("/messages/:id/events", s.getEvents, s.auth.StreamMiddleware("id"))

	user := v1.Group("", s.auth.Middleware())
	user.POST("/sessions", s.createSession)
	user.GET("/sessions", s.listSessions)
	user.GET("/sessions/:id", s.getSession)
	user.POST("/sessions/:id/messages", s.postSessionMessage)
	user.GET("/sessions/:id/messages", s.listMessages)
	user.POST("/messages", s.postMessage)
	user.GET("/messages/:id", s.getMessage)
	user.POST("/messages/:id/cancel", s.cancelMessage)
	user.POST("/validate", s.validate)
	user.GET("/sessions/:id/transitions", s.listTransitions)
	user.POST("/sessions/:id/phase", s.movePhase)
	user.GET("/strategies/:id", s.getStrategy)
	user.POST("/strategies/:id/confirm", s.confirmStrategy)

	admin := v1.Group("/llm", s.auth.Middleware(), auth.RequireAdmin())
	admin.GET("/prompts", s.listPrompts)
	admin.POST("/prompts", s.createPrompt)
	admin.POST("/prompts/:id/activate", s.activatePrompt)
	return e
}

// mustClaims returns the caller's claims; the auth middleware guarantees them.
func mustClaims(c echo.Context) *auth.Claims {
	claims, ok := auth.FromContext(c)
	if !ok {
		panic("api: route registered without auth middleware")
	}
	return claims
}
