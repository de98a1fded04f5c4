package api

import (
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/metrics"
	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/userlimit"
)

// Orchestrator is the chat orchestrator as the API uses it.
type Orchestrator interface {
	HandleMessage(ctx context.Context, req orchestration.Request) (*orchestration.Turn, error)
	CreateSession(ctx context.Context, userID, title, locale string) (*store.Session, error)
	OpenConversation(ctx context.Context, userID, name, locale string) (*store.Session, error)
	Cancel(ctx context.Context, messageID, userID string) error
	MovePhase(ctx context.Context, userID, sessionID, to, reason string) (*store.Session, error)
	ConfirmStrategy(ctx context.Context, userID, strategyID string, advance bool) (*orchestration.Confirmation, error)
}

// Store is what the API reads and writes directly (package store), by what its routes
// need: the conversation's records, the prompt versions, the JSON skills' runs and jobs, the
// watched agents' questions, and the database's health.
type Store interface {
	chatStore
	promptStore
	skillStore
	questionStore
	Ping(ctx context.Context) error
}

// Cursor reads one message's event log for one client connection (eventlog.Cursor): the
// events available now, and a channel closed when more may be (Next) or a wake called then
// (NextFunc, for a stream that waits without a goroutine), until the terminal event.
type Cursor interface {
	Next(ctx context.Context) ([]store.Event, <-chan struct{}, error)
	NextFunc(ctx context.Context, wake func()) ([]store.Event, error)
	Ended() bool
	Position() int64
}

// FollowFunc opens a cursor over a message's log for a client that saw events up to
// after; last is the message's last_event_id as read (see eventlog.Log.Follow).
type FollowFunc func(messageID string, after, last int64) Cursor

// MessageRate limits how fast one user posts messages (package userlimit).
type MessageRate interface {
	// Allow takes one message from userID's allowance, or reports how long until one is
	// available; undo gives an allowed message back when the post is refused after all.
	Allow(ctx context.Context, userID string) (ok bool, retry time.Duration, undo func())
}

// KeySet is the x-mcp-context key set published at GET /.well-known/jwks.json.
type KeySet interface {
	JWKS() []byte
}

// Config holds the API's settings.
type Config struct {
	HeartbeatInterval time.Duration
	MaxBodyBytes      int64
	// MaxSkillBodyBytes caps the bodies of the JSON skills' runs and jobs (see
	// bodyLimitMiddleware); the larger of it and MaxBodyBytes applies.
	MaxSkillBodyBytes   int64
	SerpQueriesOptional bool
	// MaxStreamsPerUser caps one user's open event streams on this replica (429
	// too_many_streams past it); 0 means none.
	MaxStreamsPerUser int
	// MaxReplyBytes is the longest reply POST /validate checks (413 reply_too_large past
	// it), the same bound a turn's reply has; 0 means none.
	MaxReplyBytes int
	// ReplyPolicy is the server's reply policy; a user's runtime_policy may only make it
	// stricter.
	ReplyPolicy stream.Policy
	// CORSOrigins get CORS answers; none by default.
	CORSOrigins []string
	// MaxHeaderBytes caps the request line and headers (431 beyond); 0 means 16 KiB.
	MaxHeaderBytes int
	// BodyTimeout is how long a client may take to send a body (408 beyond); 0 means none.
	BodyTimeout time.Duration
	// MetricsToken, when set, is the bearer token GET /metrics requires.
	MetricsToken string
	// PublicURL is where phones reach the server, for answer links; empty means the
	// address the watcher reached it at.
	PublicURL string
	// AnswerTTL is how long a watched agent's question may be answered (0: one hour).
	AnswerTTL time.Duration
	// DevTokenTTL > 0 serves GET /api/v1/dev/token with tokens of that lifetime. Set it only
	// in development: no JWT secret configured and a loopback listen address (see
	// [DevMode]).
	DevTokenTTL time.Duration
}

// Budget is the per-user model-call budget (package userlimit): Allow refuses new work past
// it with a *userlimit.ExhaustedError.
type Budget interface {
	Allow(ctx context.Context, userID string) error
	Usage(ctx context.Context, userID string) (userlimit.Usage, error)
}

// PromptTexts checks a new prompt version against the embedded text it replaces
// (skills.Library).
type PromptTexts interface {
	CheckVersion(name, locale, body string) []string
}

// Deps are the parts the API is built on.
type Deps struct {
	Config       Config
	Auth         *auth.Authority
	MCPKeys      KeySet      // nil publishes an empty key set
	MessageRate  MessageRate // nil means no per-user message rate
	AnswerRate   MessageRate // nil means no per-user rate of answers from phones
	Orchestrator Orchestrator
	Skills       Skills
	Prompts      PromptTexts // nil stores prompt versions unchecked
	Budget       Budget      // nil: no per-user call budget
	SkillJobs    SkillJobs   // nil starts no job here (they wait for a replica's runner)
	Store        Store
	Follow       FollowFunc
	Metrics      Metrics // nil means a fresh metrics.New()
	Logger       *slog.Logger
}

// Server is the HTTP API.
type Server struct {
	cfg     Config
	auth    *auth.Authority
	mcpKeys KeySet
	rate    MessageRate
	// answerRate limits each user's answers from phones.
	answerRate MessageRate
	answerPage *template.Template
	orch       Orchestrator
	skills     Skills
	prompts    PromptTexts
	budget     Budget
	jobs       SkillJobs
	store      Store
	follow     FollowFunc
	metrics    Metrics
	logger     *slog.Logger
	echo       *echo.Echo

	// streamsCtx is cancelled by [Server.EndStreams] so open event streams end at shutdown.
	streamsCtx context.Context
	endStreams context.CancelFunc
	// detached counts the detached streams (detach.go) until each has ended; detachedCtx is
	// the context they read the log with, cancelled by EndStreams once they have had their
	// time to end; listener takes their connections back when they end (nil: they are
	// closed).
	detached       sync.WaitGroup
	detachedCtx    context.Context
	cancelDetached context.CancelFunc
	listener       *listener
	// wheel holds the detached streams for their heartbeats and the end of streams.
	wheel *beatWheel
	// frames lends the event streams their frame buffers, a flush at a time.
	frames frameBuffers
	// slots counts each user's open event streams (Config.MaxStreamsPerUser).
	slots *streamSlots
	// ready is the last readiness answered: 0 none yet, 1 ready, 2 not (readiness).
	ready atomic.Int32
}

// New builds the server and its routes.
func New(d Deps) *Server {
	if d.Config.HeartbeatInterval <= 0 {
		d.Config.HeartbeatInterval = 15 * time.Second
	}
	if d.Config.MaxHeaderBytes <= 0 {
		d.Config.MaxHeaderBytes = 16 << 10
	}
	if d.Config.AnswerTTL <= 0 {
		d.Config.AnswerTTL = time.Hour
	}
	if d.Metrics == nil {
		d.Metrics = metrics.New()
	}
	s := &Server{
		cfg: d.Config, auth: d.Auth, mcpKeys: d.MCPKeys, rate: d.MessageRate, orch: d.Orchestrator, store: d.Store,
		skills: d.Skills, prompts: d.Prompts, budget: d.Budget, jobs: d.SkillJobs,
		follow: d.Follow, metrics: d.Metrics, logger: d.Logger, slots: newStreamSlots(d.Config.MaxStreamsPerUser),
		wheel: newBeatWheel(d.Config.HeartbeatInterval), answerRate: d.AnswerRate,
		answerPage: template.Must(template.New("answer").Parse(answerPageHTML)),
	}
	s.streamsCtx, s.endStreams = context.WithCancel(context.Background())
	s.detachedCtx, s.cancelDetached = context.WithCancel(context.Background())
	s.echo = s.routes()
	return s
}

// Handler is the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

// EndStreams ends every open event stream (at shutdown, after the running turns finished or
// were interrupted, so clients have seen their terminal events) and waits for the detached
// ones; the http.Server's Shutdown waits for those still in their handlers.
func (s *Server) EndStreams() {
	s.endStreams()
	s.wheel.end()
	s.endDetached()
}

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(s.logger)
	// Pre runs before routing, so its answers (431, CORS preflights, 405) need no route and
	// no auth; the others run once the route is known.
	methods := &methodTable{}
	e.Pre(requestIDMiddleware(), logMiddleware(s.logger), metricsMiddleware(s.metrics), securityHeaders(),
		headerLimit(s.cfg.MaxHeaderBytes), corsMiddleware(s.cfg.CORSOrigins), methodCheck(methods))
	e.Use(paramsCheck(), bodyLimitMiddleware(s.cfg.MaxBodyBytes, s.cfg.MaxSkillBodyBytes, s.cfg.BodyTimeout))

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.serveMetrics)
	e.GET("/api/v1/openapi.yaml", serveOpenAPI)
	e.GET("/.well-known/jwks.json", s.jwks)
	e.GET("/api/v1/genui/schema.json", serveGenUISchema)
	e.GET("/api/v1/dev/token", s.devToken)
	e.GET("/", servePlayground)
	e.GET("/reference", serveReference)
	e.GET("/playground/:file", servePlaygroundFile)
	e.GET("/playground/vendor/:file", servePlaygroundVendor)
	e.GET("/playground/client/:file", servePlaygroundClient)
	e.GET("/answer-page.css", serveAnswerCSS)
	e.GET("/answer/:token", s.showAnswer)
	e.POST("/answer/:token", s.answerQuestion)

	v1 := e.Group("/api/v1")
	v1.GET("/messages/:id/events", s.getEvents, s.auth.StreamMiddleware("id"))
	v1.GET("/skills/jobs/:id/events", s.getSkillJobEvents, s.auth.StreamMiddleware("id"))

	user := v1.Group("", s.auth.Middleware())
	user.POST("/sessions", s.createSession)
	user.GET("/sessions", s.listSessions)
	user.GET("/sessions/:id", s.getSession)
	user.POST("/sessions/:id/messages", s.postSessionMessage, s.withinBudget(), s.messageRate())
	user.GET("/sessions/:id/messages", s.listMessages)
	user.POST("/messages", s.postMessage, s.withinBudget(), s.messageRate())
	user.GET("/messages/:id", s.getMessage)
	user.GET("/messages/:id/trace", s.getTrace)
	user.POST("/messages/:id/cancel", s.cancelMessage)
	user.POST("/validate", s.validate)
	user.GET("/sessions/:id/transitions", s.listTransitions)
	user.POST("/sessions/:id/phase", s.movePhase)
	user.GET("/strategies/:id", s.getStrategy)
	user.POST("/strategies/:id/confirm", s.confirmStrategy)
	user.GET("/skills", s.listSkills)
	user.POST("/skills/:name/runs", s.runSkill, s.withinBudget())
	user.GET("/skills/runs", s.listSkillRuns)
	user.GET("/skills/runs/:id", s.getSkillRun)
	user.POST("/skills/:name/jobs", s.postSkillJob, s.withinBudget())
	user.GET("/skills/jobs/:id", s.getSkillJob)
	user.POST("/skills/jobs/:id/cancel", s.cancelSkillJob)
	user.GET("/me/usage", s.getUsage)
	user.POST("/ai-sdk/chat", s.postAISDKChat, s.withinBudget(), s.messageRate())
	user.GET("/ai-sdk/chat/:id/stream", s.getAISDKStream)
	user.GET("/ai-sdk/chat/:id/messages", s.getAISDKMessages)
	user.POST("/ag-ui", s.postAGUIRun, s.withinBudget(), s.messageRate())
	user.POST("/watch/questions", s.recordQuestion)
	user.POST("/watch/questions/:id/outcome", s.questionOutcome)
	user.GET("/watch/answers", s.followAnswers)

	admin := v1.Group("/llm", s.auth.Middleware(), auth.RequireAdmin())
	admin.GET("/prompts", s.listPrompts)
	admin.POST("/prompts", s.createPrompt)
	admin.POST("/prompts/:id/activate", s.activatePrompt)
	admin.POST("/prompts/:id/deactivate", s.deactivatePrompt)
	*methods = newMethodTable(e)
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
