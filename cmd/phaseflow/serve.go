package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/phaseflow/phaseflow/api"
	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/genui"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/jsonskill/jobs"
	"github.com/phaseflow/phaseflow/mcpcontext"
	"github.com/phaseflow/phaseflow/metrics"
	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/upstream/mcptools"
	"github.com/phaseflow/phaseflow/upstream/router"
	"github.com/phaseflow/phaseflow/upstream/scripted"
	"github.com/phaseflow/phaseflow/userlimit"
)

// devTokenTTL is the lifetime of the token printed at start when no secret is configured.
const devTokenTTL = 24 * time.Hour

// runServe runs the server until ctx ends (SIGINT or SIGTERM), then shuts down gracefully.
func runServe(ctx context.Context, sio stdio, args []string) int {
	cfg, err := config.Load(args, sio.getenv)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(sio.out, err)
		return 0
	}
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow serve: %v\n", err)
		return 2
	}
	logger := cfg.Logger(sio.err)
	for _, u := range config.UnknownVariables(sio.environment()) {
		logger.Warn("unknown setting ignored", "variable", u.Name, "did_you_mean", u.Closest)
	}
	if err := serve(ctx, cfg, logger, sio.out); err != nil {
		logger.Error("server stopped", "err", err)
		return 1
	}
	return 0
}

// serve wires the parts together and runs them; every part it starts it also stops.
func serve(ctx context.Context, cfg config.Config, logger *slog.Logger, out io.Writer) error {
	replica := replicaID()
	logger = logger.With("replica", replica)
	logger.Info("starting phaseflow", "config", cfg)
	stopDebug, err := startDebug(cfg.DebugAddr, logger)
	if err != nil {
		return err
	}
	defer stopDebug()
	st, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	mcpSigner, err := mcpcontext.FromConfig(cfg)
	if err != nil {
		return err
	}
	authority, stopKeys, err := newAuthority(cfg, logger, mcpSigner.KeyIDs())
	if err != nil {
		return err
	}
	defer stopKeys()
	m := metrics.New()
	up, primary, stopUpstream, err := startUpstream(ctx, cfg, logger, m)
	if err != nil {
		return err
	}
	defer stopUpstream()
	if err := registerMetrics(m, st, up); err != nil {
		return err
	}
	cards, err := genui.NewValidator()
	if err != nil {
		return err
	}
	// Every model call, a turn's and a JSON skill's, is counted against its user's budget.
	meter := userlimit.NewMeter(up, st, int64(cfg.UserCallBudget), logger)
	skillRunner, err := newSkillRunner(cfg, meter, st, logger, m)
	if err != nil {
		return err
	}
	m.Zero(knownLabels(cfg, skillRunner.Catalog()))
	skillJobs := jobs.New(st, skillRunner, jobs.Options{Lease: store.Lease{Owner: replica, TTL: cfg.LeaseTTL},
		Concurrency: cfg.SkillJobConcurrency, Logger: logger})
	skillJobs.Start(ctx)
	defer skillJobs.Close()
	log := eventlog.New(st, replica, logger, eventlog.Options{Observe: m.CommitObserved})
	defer closeLog(log, logger)
	orch := orchestration.New(orchestrationConfig(cfg, primary, st.Driver()), orchestration.Deps{
		Store: st, Log: log, Upstream: meter, Skills: skills.New(), Handlers: handlers.New(stopCriteria(cfg)), Signer: mcpSigner, Logger: logger, Metrics: m,
		UserTurns: userTurns(cfg), GenUI: cards,
	})
	stopFollowing, err := followReplicas(st, log, orch)
	if err != nil {
		return err
	}
	defer stopFollowing()
	if n, err := orch.Start(ctx); err != nil {
		return err
	} else if n > 0 {
		logger.Warn("ended generations left unfinished by replicas that are gone", "messages", n)
	}
	srv := api.New(api.Deps{
		Config: apiConfig(cfg, skillRunner.Catalog()), Auth: authority, MCPKeys: mcpSigner, Metrics: m,
		MessageRate:  messageRate(cfg, st, logger),
		AnswerRate:   userlimit.NewRate(st, answersPerMinute, answersBurst, logger),
		Orchestrator: orch, Skills: skillRunner, Prompts: skills.New(), SkillJobs: skillJobs, Store: st, Logger: logger,
		Budget: meter,
		Follow: func(id string, after, last int64) api.Cursor { return log.Follow(id, after, last) },
	})
	drain := func() { closeLog(log, logger) }
	return listenAndServe(ctx, cfg, logger, out, srv, orch, drain, authority)
}

// newSkillRunner builds the JSON-skill runner on the chat turns' router.
func newSkillRunner(cfg config.Config, up jsonskill.Model, st *store.Store, logger *slog.Logger, m jsonskill.Metrics) (*jsonskill.Runner, error) {
	catalog, err := jsonskill.Load(skills.New().JSON())
	if err != nil {
		return nil, err
	}
	return jsonskill.New(catalog, up, st, jsonskill.Options{
		CallTimeout: cfg.SkillCallTimeout, DedupWindow: cfg.SkillDedupWindow, MaxOutputTokens: cfg.SkillMaxOutputTokens,
		Logger: logger, Metrics: m,
	}), nil
}

// userTurns is the per-user bound on generations, nil when only the global one applies.
func userTurns(cfg config.Config) orchestration.UserTurns {
	if cfg.MaxTurnsPerUser <= 0 {
		return nil
	}
	return userlimit.NewTurns(cfg.MaxTurnsPerUser)
}

// connectionReserve is the file descriptors kept for what is not a client connection when
// the connection cap follows the file limit: the database pool, the log, the data files.
const connectionReserve = 256

// maxConnections is the connection cap: PHASEFLOW_MAX_CONNECTIONS, or the file limit (raised
// to its hard maximum) less the reserve, logged either way.
// idleTimeout is how long an idle keep-alive connection is kept while the replica has
// room; the connection tracker shortens it as the room fills.
const idleTimeout = 2 * time.Minute

// connLimits are the replica's connection limits: the cap, a client's share, the trusted
// proxies, and the health answer given when the cap is reached.
func connLimits(cfg config.Config, srv *api.Server, logger *slog.Logger) api.ConnLimits {
	return api.ConnLimits{Max: maxConnections(cfg, logger), PerClient: cfg.MaxConnectionsPerClient, IdleTimeout: idleTimeout,
		Health: srv.Probe, TrustedProxies: cfg.TrustedProxies}
}

func maxConnections(cfg config.Config, logger *slog.Logger) int {
	limit := raiseFileLimit()
	n := cfg.MaxConnections
	if n == 0 {
		n = max(int(min(limit, 1<<30))-connectionReserve, 64)
		if limit == 0 {
			n = 1 << 30
		}
	}
	logger.Info("connection cap", "max_connections", n, "file_limit", limit)
	return n
}

// stopCriteria are the phases' performance thresholds, none unless configured.
func stopCriteria(cfg config.Config) handlers.Criteria {
	return handlers.Criteria{MinSharpe: cfg.StopMinSharpe, MaxDrawdown: cfg.StopMaxDrawdown, MaxScenarioLoss: cfg.StopMaxScenarioLoss}
}

// A user's answers from phones: a few at once, then one every two seconds. An answer is a
// tap on a notification; more than that is someone trying tokens or a loop.
const (
	answersPerMinute = 30
	answersBurst     = 10
)

// messageRate is the per-user message rate, nil when there is none.
func messageRate(cfg config.Config, st *store.Store, logger *slog.Logger) api.MessageRate {
	if cfg.UserMessageRate <= 0 {
		return nil
	}
	return userlimit.NewRate(st, cfg.UserMessageRate, cfg.UserMessageBurst, logger)
}

// replicaID names this process among the replicas sharing a database: host, pid and a
// random suffix, so a restarted process is a new replica (the old one's turns are orphans).
func replicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
}

// logCloseTimeout bounds how long shutdown waits for the event log's last commits (a
// database still down at shutdown): what is left was never shown to a client.
const logCloseTimeout = 10 * time.Second

func closeLog(log *eventlog.Log, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), logCloseTimeout)
	defer cancel()
	if err := log.Close(ctx); err != nil {
		logger.Error("event log closed with events unwritten; their messages end when their leases expire", "err", err)
	}
}

func apiConfig(cfg config.Config, skills *jsonskill.Catalog) api.Config {
	return api.Config{
		MaxSkillBodyBytes: skillBodyBytes(skills),
		HeartbeatInterval: cfg.HeartbeatInterval, MaxBodyBytes: cfg.MaxBodyBytes, SerpQueriesOptional: cfg.SerpQueriesOptional,
		MaxReplyBytes: cfg.MaxReplyBytes, MaxStreamsPerUser: cfg.MaxStreamsPerUser,
		ReplyPolicy: stream.Policy(cfg.ReplyPolicy),
		CORSOrigins: cfg.CORSOrigins, MaxHeaderBytes: cfg.MaxHeaderBytes, BodyTimeout: cfg.BodyTimeout,
		MetricsToken: cfg.MetricsToken.Reveal(), DevTokenTTL: devTokenTTLFor(cfg),
		PublicURL: cfg.PublicURL, AnswerTTL: cfg.AnswerTTL,
	}
}

// skillBodyBytes is the body the JSON skills' routes take: the largest snapshot a skill
// accepts, every byte of it written as JSON's six-byte escape at worst (a capture of
// nothing but escape sequences), and room for the rest of the input.
func skillBodyBytes(skills *jsonskill.Catalog) int64 {
	return int64(6*skills.MaxInputBytes()) + 64<<10
}

// devTokenTTLFor is the lifetime of the playground's dev tokens: devTokenTTL in development
// (no JWT secret or identity provider configured, a loopback address), else 0 (no route).
func devTokenTTLFor(cfg config.Config) time.Duration {
	if api.DevMode(tokensConfigured(cfg), cfg.Addr) {
		return min(devTokenTTL, cfg.JWTMaxTTL)
	}
	return 0
}

// tokensConfigured reports whether user tokens come from a configured secret or identity
// provider, that is, whether this is not a development set-up.
func tokensConfigured(cfg config.Config) bool { return cfg.JWTSecret.IsSet() || cfg.JWTJWKSURL != "" }

// registerMetrics adds the build, the store's pool statistics and the upstream endpoints'
// breakers.
func registerMetrics(m *metrics.Metrics, st *store.Store, up *router.Router) error {
	b := currentBuild()
	if err := m.RegisterBuild(b.Version, b.Revision, b.Go); err != nil {
		return err
	}
	err := m.RegisterEndpoints(func() []metrics.EndpointState {
		var out []metrics.EndpointState
		for _, e := range up.EndpointStates() {
			out = append(out, metrics.EndpointState{ID: e.ID, Provider: e.Provider, State: e.State, Failures: e.ConsecutiveFailures})
		}
		return out
	})
	if err != nil {
		return err
	}
	for name, db := range st.Pools() {
		if err := m.RegisterDB(name, db); err != nil {
			return err
		}
	}
	return nil
}

// newAuthority builds the user-token authority: the HS256 secret, and the identity
// provider's keys when PHASEFLOW_JWT_JWKS_URL is set (refreshed until stop is called). The
// x-mcp-context key ids are denied, so those keys never authenticate a user.
func newAuthority(cfg config.Config, logger *slog.Logger, mcpKeyIDs []string) (_ *auth.Authority, stop func(), err error) {
	opts, err := auth.OptionsFromConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	stop = func() {}
	if cfg.JWTJWKSURL != "" {
		p, err := auth.ProviderKeys(cfg.JWTJWKSURL, cfg.JWTJWKSRefresh, logger)
		if err != nil {
			return nil, nil, err
		}
		opts.ProviderKeys, stop = p.Keyfunc, p.Close
	}
	opts.DeniedKeyIDs = mcpKeyIDs
	return auth.NewWithOptions(opts), stop, nil
}

// openStore opens and migrates the database. One that cannot be reached yet (restarting,
// or starting beside this replica) is waited for up to the outage grace, with a line per
// attempt, before the replica gives up: a rolling deploy that meets a database restart
// should not crash-loop.
func openStore(ctx context.Context, cfg config.Config, logger *slog.Logger) (*store.Store, error) {
	wait, cancel := context.WithTimeout(ctx, cfg.OutageGrace)
	defer cancel()
	began := time.Now()
	var st *store.Store
	err := store.WhileUnavailable(wait, func() (err error) {
		st, err = openMigrated(ctx, cfg, logger)
		if store.IsUnavailable(err) {
			logger.Warn("database unreachable at start; waiting for it", "waited", time.Since(began).Round(time.Millisecond),
				"grace", cfg.OutageGrace, "err", err)
		}
		return err
	})
	return st, err
}

// openMigrated is one attempt of openStore.
func openMigrated(ctx context.Context, cfg config.Config, logger *slog.Logger) (*store.Store, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	applied, err := st.Migrate(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	logger.Info("database ready", "driver", st.Driver(), "migrations_applied", applied)
	return st, nil
}

// primaryEndpoint is what a turn reports before an endpoint has answered: the endpoint
// tried first.
type primaryEndpoint struct {
	id              int
	provider, model string
}

// startUpstream builds the router over the configured endpoints, or over the built-in
// scripted upstream, started on a loopback port so that a bare "phaseflow serve" answers
// turns over the real wire format. The returned function stops what it started.
func startUpstream(ctx context.Context, cfg config.Config, logger *slog.Logger, m *metrics.Metrics) (*router.Router, primaryEndpoint, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	eps, provider := cfg.Endpoints, ""
	if len(eps) == 0 {
		builtIn, stopScripted, err := startScripted(ctx, cfg, logger)
		if err != nil {
			return nil, primaryEndpoint{}, nil, err
		}
		eps, provider, stops = []config.Endpoint{builtIn}, "scripted", append(stops, stopScripted)
	}
	host := mcptools.New(mcptools.Options{CallTimeout: cfg.MCPCallTimeout, Logger: logger})
	stops = append(stops, host.CloseIdleConnections)
	endpoints := make([]router.Endpoint, len(eps))
	for i, e := range eps {
		client, closeIdle := wireClient(cfg, e, host)
		stops = append(stops, closeIdle)
		p := cmp.Or(provider, upstream.DetectProvider(e.URL))
		endpoints[i] = router.Endpoint{ID: e.ID, Provider: p, Model: e.Model, Priority: e.Priority, Client: client,
			JSONMode: upstream.ResolveJSONMode(string(e.JSONMode), p)}
		logger.Info("upstream endpoint", "endpoint", e, "provider", endpoints[i].Provider)
	}
	r, err := router.New(endpoints, router.Options{
		MaxAttempts: cfg.UpstreamMaxAttempts, FirstByteTimeout: cfg.UpstreamFirstByteTimeout,
		RetryAfterCap: cfg.UpstreamRetryAfterCap, BreakerFailures: cfg.UpstreamBreakerFailures,
		BreakerCooldown: cfg.UpstreamBreakerCooldown, Logger: logger,
		Observe: func(r router.Request) { m.UpstreamRequest(r.EndpointID, r.Outcome, r.FirstByte, r.Total) },
	})
	if err != nil {
		stop()
		return nil, primaryEndpoint{}, nil, err
	}
	first := r.EndpointStates()[0] // in priority order
	return r, primaryEndpoint{id: first.ID, provider: first.Provider, model: first.Model}, stop, nil
}

// startScripted starts the built-in scripted upstream and returns it as the one endpoint,
// on the configured wire and model. It outlives the signal that stops the server (ctx):
// the turns it serves finish within the shutdown grace as they would with an external
// upstream, and the returned function stops it once they have.
func startScripted(ctx context.Context, cfg config.Config, logger *slog.Logger) (config.Endpoint, func(), error) {
	running, err := scripted.Listen(context.WithoutCancel(ctx), "127.0.0.1:0", scripted.Options{Logger: logger})
	if err != nil {
		return config.Endpoint{}, nil, fmt.Errorf("start the scripted upstream: %w", err)
	}
	logger.Info("no upstream configured: using the built-in scripted upstream", "url", running.URL(), "wire", cfg.UpstreamWire)
	stop := func() {
		if err := running.Close(); err != nil {
			logger.Warn("stop the scripted upstream", "err", err)
		}
	}
	return config.Endpoint{ID: 1, URL: running.URL(), Model: cfg.UpstreamModel, Wire: cfg.UpstreamWire, Priority: 1, JSONMode: cfg.UpstreamJSONMode}, stop, nil
}

// wireClient returns the client of one endpoint for its wire, and the function that
// closes its idle connections.
func wireClient(cfg config.Config, e config.Endpoint, host *mcptools.Host) (router.Streamer, func()) {
	if e.Wire == config.WireChat {
		c := upstream.NewChat(upstream.ChatConfig{BaseURL: e.URL, APIKey: e.APIKey.Reveal(), Tools: host, MaxToolRounds: cfg.MaxToolRounds})
		return c, c.CloseIdleConnections
	}
	c := upstream.New(upstream.Config{BaseURL: e.URL, APIKey: e.APIKey.Reveal()})
	return c, c.CloseIdleConnections
}

// followReplicas passes PostgreSQL notifications on (nothing to do on SQLite): new events of
// messages this process's streams follow wake them, and cancels reach the orchestrator,
// which stops the turn if it runs here. The returned function stops the forwarding
// goroutine and waits for it.
func followReplicas(st *store.Store, log *eventlog.Log, orch *orchestration.Orchestrator) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	notes, err := st.Listen(ctx)
	if err != nil || notes == nil {
		cancel()
		return func() {}, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := range notes { // closed when ctx ends
			if !n.Cancel {
				log.Notify(n.MessageID) // "" on Resync wakes every follower
			}
			orch.Notified(n)
		}
	})
	return func() { cancel(); wg.Wait() }, nil
}

// orchestrationConfig is the orchestrator's part of cfg. The primary endpoint is what a
// turn reports until the router names the endpoint that answered.
func orchestrationConfig(cfg config.Config, primary primaryEndpoint, driver string) orchestration.Config {
	return orchestration.Config{
		LeaseTTL: cfg.LeaseTTL, OutageGrace: cfg.OutageGrace,
		RecoverAll: driver == store.DriverSQLite,
		Provider:   primary.provider, Model: primary.model, EndpointID: primary.id,
		TurnTimeout: cfg.TurnTimeout, IdleTimeout: cfg.IdleTimeout,
		Limits:             stream.Limits{ReplyBytes: cfg.MaxReplyBytes, Events: cfg.MaxTurnEvents},
		MaxConcurrentTurns: cfg.MaxConcurrentTurns, ReplyPolicy: stream.Policy(cfg.ReplyPolicy),
		SerpQueriesOptional: cfg.SerpQueriesOptional,
		ChainResponses:      cfg.UpstreamChain, MCPServers: mcpServers(cfg.MCPServers), PhaseTurnLimit: cfg.PhaseTurnLimit,
	}
}

func mcpServers(in []config.MCPServer) []prompt.MCPServer {
	out := make([]prompt.MCPServer, len(in))
	for i, s := range in {
		out[i] = prompt.MCPServer{Label: s.Label, URL: s.URL}
	}
	return out
}

// listenAndServe serves HTTP until ctx ends or the server fails, then shuts down in order:
// stop accepting, let running turns finish for the grace period (then interrupt them),
// drain the event log (their terminal events committed and delivered), end the event
// streams, and wait for every handler. A server that fails to serve goes through the same steps, so its running
// turns still end interrupted before the log closes.
func listenAndServe(ctx context.Context, cfg config.Config, logger *slog.Logger, out io.Writer, srv *api.Server, orch *orchestration.Orchestrator, drain func(), authority *auth.Authority) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		grace, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
		defer cancel()
		orch.Shutdown(grace)
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	conns := api.LimitConnections(ln, connLimits(cfg, srv, logger))
	hs := &http.Server{Handler: conns.Handler(srv.Handler()), ReadHeaderTimeout: cfg.HeaderTimeout, IdleTimeout: idleTimeout,
		MaxHeaderBytes: netHTTPHeaderLimit(cfg.MaxHeaderBytes), ConnState: conns.ConnState, ConnContext: conns.ConnContext}
	errc := make(chan error, 1)
	served := srv.Listener(conns) // detached event streams give their connections back through it
	go func() { errc <- hs.Serve(served) }()
	announce(out, ln.Addr().String(), cfg, authority, logger)

	var serveErr error
	select {
	case serveErr = <-errc:
		serveErr = fmt.Errorf("http server: %w", serveErr)
		logger.Error("http server failed; shutting down", "err", serveErr)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "grace", cfg.ShutdownGrace)
	shutdownDone := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace+10*time.Second)
		defer cancel()
		shutdownDone <- hs.Shutdown(sctx)
	}()
	grace, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	orch.Shutdown(grace)
	cancel()
	drain()
	srv.EndStreams()
	err = <-shutdownDone
	if serveErr == nil {
		<-errc // Serve returned http.ErrServerClosed
	}
	logger.Info("stopped")
	return errors.Join(serveErr, err)
}

// netHTTPHeaderLimit is the http.Server's MaxHeaderBytes: well above the API's own limit,
// so that requests between the two get the API's JSON 431 instead of net/http's plain-text
// one. Beyond it net/http still answers 431 by itself, before any handler.
func netHTTPHeaderLimit(apiLimit int) int { return max(1<<20, 4*apiLimit) }

// announce prints where the server listens, the playground's URL and, when no JWT secret
// and no identity provider were configured (local development), a ready token for "dev".
func announce(out io.Writer, addr string, cfg config.Config, authority *auth.Authority, logger *slog.Logger) {
	fmt.Fprintf(out, "phaseflow listening on http://%s\n", addr)
	hint := "sign in with a token"
	if devTokenTTLFor(cfg) > 0 {
		hint = `"Use the dev token" signs you in`
	}
	fmt.Fprintf(out, "playground: open %s in a browser (%s)\n", playgroundURL(addr), hint)
	if tokensConfigured(cfg) {
		return
	}
	ttl := min(devTokenTTL, authority.MaxTTL())
	token, err := authority.Sign("dev", auth.RoleUser, ttl)
	if err != nil {
		logger.Warn("sign the dev token", "err", err)
		return
	}
	fmt.Fprintf(out, "dev token (user \"dev\", valid %s):\n%s\n", ttl, token)
}

// playgroundURL is the address to open the page at: the listen address, with a wildcard
// host (all interfaces) replaced by the loopback one a browser on this machine can use.
func playgroundURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
