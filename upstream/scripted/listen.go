package scripted

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// shutdownGrace bounds how long Close waits for open connections after the streams have
// been told to stop; the handlers return as soon as their context ends, so this is only
// reached by a client that stops reading.
const shutdownGrace = 5 * time.Second

// Running is a scripted upstream serving on its own listener, as started by [Listen].
type Running struct {
	server *Server
	url    string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   [2]error // of Serve and of Shutdown, read after wg.Wait
}

// Listen serves a scripted upstream with opts on addr (127.0.0.1:0 when empty: a free
// loopback port). It returns once the listener is open. The server stops when ctx ends or
// [Running.Close] is called; open streams (a stall included) end at once either way.
func Listen(ctx context.Context, addr string, opts Options) (*Running, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("scripted: listen on %s: %w", addr, err)
	}
	base, cancel := context.WithCancel(ctx)
	s := New(opts)
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		// Request contexts derive from base, so cancelling it ends every stream; without
		// that, Shutdown would wait for streams that never go idle.
		BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	r := &Running{server: s, url: baseURL(ln.Addr()), cancel: cancel}
	r.wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			r.errs[0] = fmt.Errorf("scripted: serve: %w", err)
		}
	})
	r.wg.Go(func() {
		<-base.Done()
		sctx, stop := context.WithTimeout(context.Background(), shutdownGrace)
		defer stop()
		if err := srv.Shutdown(sctx); err != nil {
			r.errs[1] = fmt.Errorf("scripted: shutdown: %w", errors.Join(err, srv.Close()))
		}
	})
	return r, nil
}

// URL returns the base URL to configure as the upstream, such as http://127.0.0.1:9090/v1.
func (r *Running) URL() string { return r.url }

// MCPURL returns the URL of the scripted MCP server labelled label (strategy_engine,
// risk_lab or deployer), such as http://127.0.0.1:9090/mcp/strategy_engine.
func (r *Running) MCPURL(label string) string {
	return strings.TrimSuffix(r.url, "/v1") + "/mcp/" + label
}

// MCPServers returns the label=url list of the scripted MCP servers, in the form of
// PHASEFLOW_MCP_SERVERS.
func (r *Running) MCPServers() string {
	labels := []string{serverStrategyEngine, serverRiskLab, serverDeployer}
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = l + "=" + r.MCPURL(l)
	}
	return strings.Join(parts, ",")
}

// Server returns the handler being served, for [Server.Requests].
func (r *Running) Server() *Server { return r.server }

// Close stops the server, ends open streams, and waits for its goroutines. It may be called
// more than once.
func (r *Running) Close() error {
	r.cancel()
	r.wg.Wait()
	return errors.Join(r.errs[0], r.errs[1])
}

// baseURL is the http://host:port/v1 of a listening address; an unspecified host (0.0.0.0,
// ::) is reached on loopback.
func baseURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String() + "/v1"
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port)) + "/v1"
}
