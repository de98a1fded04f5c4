package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/api"
	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/upstream"
	"github.com/phaseflow/phaseflow/orchestration/upstream/scripted"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
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
	if err := serve(ctx, cfg, logger, sio.out); err != nil {
		logger.Error("server stopped", "err", err)
		return 1
	}
	return 0
}

// serve wires the parts together and runs them; every part it starts it also stops.
func serve(ctx context.Context, cfg config.Config, logger *slog.Logger, out io.Writer) error {
	logger.Info("starting phaseflow", "config", cfg)
	st, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	authority, err := auth.FromConfig(cfg)
	if err != nil {
		return err
	}
	up, provider, stopUpstream, err := startUpstream(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer stopUpstream()

	log := eventlog.New(st, logger, eventlog.Options{})
	defer log.Close()
	stopFollowing, err := followReplicas(st, log)
	if err != nil {
		return err
	}
	defer stopFollowing()
	orch := orchestration.New(orchestrationConfig(cfg, provider), orchestration.Deps{
		Store: st, Log: log, Upstream: up, Skills: skills.New(), Handlers: handlers.New(), Signer: authority, Logger: logger,
	})
	if n, err := orch.Recover(ctx); err != nil {
		return err
	} else if n > 0 {
		logger.Warn("marked generations of an earlier run as interrupted", "messages", n)
	}
	srv := api.New(api.Deps{
		Config: api.Config{HeartbeatInterval: cfg.HeartbeatInterval, MaxBodyBytes: cfg.MaxBodyBytes, SerpQueriesOptional: cfg.SerpQueriesOptional},
		Auth:   authority, Orchestrator: orch, Sessions: orch.Sessions(), Store: st, Log: log, Logger: logger,
	})
	return listenAndServe(ctx, cfg, logger, out, srv, orch, authority)
}

func openStore(ctx context.Context, cfg config.Config, logger *slog.Logger) (*store.Store, error) {
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

// startUpstream returns the configured upstream, or starts the built-in scripted one on a
// loopback port so that a bare "phaseflow serve" answers turns over the real wire format.
func startUpstream(ctx context.Context, cfg config.Config, logger *slog.Logger) (*upstream.Client, string, func(), error) {
	if cfg.UpstreamURL != "" {
		c := upstream.New(upstream.Config{BaseURL: cfg.UpstreamURL, APIKey: cfg.UpstreamAPIKey.Reveal()})
		return c, "openai", c.CloseIdleConnections, nil
	}
	running, err := scripted.Listen(ctx, "127.0.0.1:0", scripted.Options{Logger: logger})
	if err != nil {
		return nil, "", nil, fmt.Errorf("start the scripted upstream: %w", err)
	}
	logger.Info("no upstream configured: using the built-in scripted upstream", "url", running.URL())
	c := upstream.New(upstream.Config{BaseURL: running.URL()})
	stop := func() {
		c.CloseIdleConnections()
		if err := running.Close(); err != nil {
			logger.Warn("stop the scripted upstream", "err", err)
		}
	}
	return c, "scripted", stop, nil
}

// followReplicas wakes the event streams of this process when another replica appends to a
// message they follow (PostgreSQL LISTEN/NOTIFY; nothing to do on SQLite). The returned
// function stops the forwarding goroutine and waits for it.
func followReplicas(st *store.Store, log *eventlog.Log) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	notes, err := st.Listen(ctx)
	if err != nil || notes == nil {
		cancel()
		return func() {}, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := range notes { // closed when ctx ends
			log.Notify(n.MessageID) // "" on Resync wakes every follower
		}
	})
	return func() { cancel(); wg.Wait() }, nil
}

func orchestrationConfig(cfg config.Config, provider string) orchestration.Config {
	return orchestration.Config{
		Provider: provider, Model: cfg.UpstreamModel, EndpointID: 1,
		TurnTimeout: cfg.TurnTimeout, IdleTimeout: cfg.IdleTimeout,
		MaxConcurrentTurns: cfg.MaxConcurrentTurns, ReplyPolicy: string(cfg.ReplyPolicy),
		SerpQueriesOptional: cfg.SerpQueriesOptional,
		ChainResponses:      cfg.UpstreamChain, MCPServers: mcpServers(cfg.MCPServers), PhaseTurnLimit: cfg.PhaseTurnLimit,
	}
}

func mcpServers(in []config.MCPServer) []orchestration.MCPServer {
	out := make([]orchestration.MCPServer, len(in))
	for i, s := range in {
		out[i] = orchestration.MCPServer{Label: s.Label, URL: s.URL}
	}
	return out
}

// listenAndServe serves HTTP until ctx ends, then shuts down in order: stop accepting, let
// running turns finish for the grace period (then interrupt them), end the event streams
// (whose clients have seen their terminal events by then), and wait for every handler.
func listenAndServe(ctx context.Context, cfg config.Config, logger *slog.Logger, out io.Writer, srv *api.Server, orch *orchestration.Orchestrator, authority *auth.Authority) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	announce(out, ln.Addr().String(), cfg, authority, logger)

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
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
	srv.EndStreams()
	err = <-shutdownDone
	<-errc // Serve returned http.ErrServerClosed
	logger.Info("stopped")
	return err
}

// announce prints where the server listens and, when no JWT secret was configured (local
// development), a ready token for user "dev".
func announce(out io.Writer, addr string, cfg config.Config, authority *auth.Authority, logger *slog.Logger) {
	fmt.Fprintf(out, "phaseflow listening on http://%s\n", addr)
	if cfg.JWTSecret.IsSet() {
		return
	}
	token, err := authority.Sign("dev", auth.RoleUser, devTokenTTL)
	if err != nil {
		logger.Warn("sign the dev token", "err", err)
		return
	}
	fmt.Fprintf(out, "dev token (user \"dev\", valid %s):\n%s\n", devTokenTTL, token)
}
