package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/upstream/scripted"
)

// runMockUpstream serves the scripted upstream on its own until ctx ends:
//
//	phaseflow mock-upstream [--addr 127.0.0.1:9090] [--pace 2ms] [--chunk-size 24]
//
// It speaks the Responses and the Chat Completions streaming APIs, so a server started
// with the printed PHASEFLOW_UPSTREAM_URL (the first line on stdout; PHASEFLOW_UPSTREAM_WIRE
// picks the wire) talks to it as to a real LLM. The second line, PHASEFLOW_MCP_SERVERS,
// names the MCP servers it also serves, which Phaseflow calls itself on the chat wire.
// Logs go to stderr. Fault markers in a user message, such as [[fault:http_429]], make it misbehave on
// purpose (see package scripted). Exit status: 0 after a clean shutdown, 1 failure, 2 usage.
func runMockUpstream(ctx context.Context, sio stdio, args []string) int {
	fs := flag.NewFlagSet("phaseflow mock-upstream", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:9090", "host:port to listen on (port 0 picks a free one)")
	pace := fs.Duration("pace", scripted.DefaultPace, "delay between two text deltas (0 for none)")
	chunk := fs.Int("chunk-size", scripted.DefaultChunkSize, "characters (runes) per text delta")
	const line = "usage: phaseflow mock-upstream [--addr host:port] [--pace duration] [--chunk-size n]"
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(sio.out, config.FlagUsage(line, fs))
			return 0
		}
		fmt.Fprintf(sio.err, "phaseflow mock-upstream: %v\n%s", config.FlagError(err), config.FlagUsage(line, fs))
		return 2
	}
	if err := checkMockFlags(fs.Args(), *pace, *chunk); err != nil {
		fmt.Fprintf(sio.err, "phaseflow mock-upstream: %v\nRun \"phaseflow mock-upstream -h\" for usage.\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(sio.err, nil))
	opts := scripted.Options{ChunkSize: *chunk, Pace: *pace, Logger: log}
	if *pace == 0 {
		opts.Pace = -1 // Options reads 0 as "the default"
	}
	run, err := scripted.Listen(ctx, *addr, opts)
	if err != nil {
		log.Error("mock upstream: cannot start", "err", err)
		return 1
	}
	fmt.Fprintf(sio.out, "PHASEFLOW_UPSTREAM_URL=%s\nPHASEFLOW_MCP_SERVERS=%s\n", run.URL(), run.MCPServers())
	log.Info("mock upstream: serving", "url", run.URL(), "mcp_servers", run.MCPServers(), "pace", *pace, "chunk_size", *chunk)
	<-ctx.Done()
	if err := run.Close(); err != nil {
		log.Error("mock upstream: shutdown", "err", err)
		return 1
	}
	log.Info("mock upstream: stopped")
	return 0
}

// checkMockFlags reports a usage error in the mock-upstream flags.
func checkMockFlags(rest []string, pace time.Duration, chunk int) error {
	switch {
	case len(rest) > 0:
		return fmt.Errorf("unexpected argument %q", rest[0])
	case pace < 0:
		return fmt.Errorf("--pace: must not be negative, got %v", pace)
	case chunk <= 0:
		return fmt.Errorf("--chunk-size: must be positive, got %d", chunk)
	}
	return nil
}
