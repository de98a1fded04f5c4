package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/phaseflow/phaseflow/config"
)

// healthcheckTimeout bounds the probe: a container runtime's health check has its own
// interval, and a hung server must count as unhealthy.
const healthcheckTimeout = 3 * time.Second

// runHealthcheck asks the server's /readyz and exits 0 when it answers 200, 1 otherwise:
// the image's HEALTHCHECK, since a distroless image has no shell or curl to run one. The
// address is --addr, else PHASEFLOW_ADDR (an unspecified host such as 0.0.0.0 is asked on
// loopback).
func runHealthcheck(ctx context.Context, sio stdio, args []string) int {
	fs := flag.NewFlagSet("phaseflow healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", sio.getenv("PHASEFLOW_ADDR"), "host:port of the server (default: $PHASEFLOW_ADDR, else 127.0.0.1:8080)")
	const line = "usage: phaseflow healthcheck [--addr host:port]"
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(sio.out, config.FlagUsage(line, fs))
		return 0
	} else if err != nil || fs.NArg() > 0 {
		fmt.Fprintf(sio.err, "phaseflow healthcheck: %v\n%s", config.FlagError(cmpErr(err, fs.Args())), config.FlagUsage(line, fs))
		return 2
	}
	url := "http://" + probeAddr(*addr) + "/readyz"
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow healthcheck: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow healthcheck: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(sio.err, "phaseflow healthcheck: %s answered %d\n", url, resp.StatusCode)
		return 1
	}
	return 0
}

// probeAddr is where to reach a server listening on addr from the same host.
func probeAddr(addr string) string {
	if addr == "" {
		return "127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// cmpErr is err, or the unexpected arguments when parsing succeeded.
func cmpErr(err error, rest []string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("unexpected argument %q", rest[0])
}
