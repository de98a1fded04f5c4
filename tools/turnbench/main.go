// Command turnbench measures what Phaseflow adds to a streamed model call, against a bare
// reverse proxy in front of the same upstream: the time to the first delta, turns a second
// and CPU per turn at a concurrency, and memory per open generation. It starts the scripted
// upstream (phaseflow mock-upstream), a bare httputil.ReverseProxy in front of it, and
// phaseflow serve (SQLite, or PostgreSQL with -database-url) pinned to one core
// (GOMAXPROCS=1); the direct and proxied arms replay the exact request Phaseflow sends
// upstream, so every arm plays the same reply. Arms are interleaved turn by turn, so a
// machine's drift falls on all of them.
//
//	go run ./tools/turnbench                     # SQLite, about a minute
//	go run ./tools/turnbench -database-url postgres://postgres@127.0.0.1:5432/bench?sslmode=disable
//
// It prints a Markdown table with the machine and the build it measured; the figures on
// docs/performance.md were made with it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/phaseflow/phaseflow/tools/internal/bench"
)

func main() {
	o := opts{}
	fs := flag.NewFlagSet("turnbench", flag.ExitOnError)
	fs.StringVar(&o.bin, "bin", "", "the phaseflow binary (default: built from this checkout)")
	fs.StringVar(&o.dsn, "database-url", "", "PostgreSQL for Phaseflow (default: SQLite in a temporary data dir)")
	fs.IntVar(&o.turns, "turns", 60, "turns per arm for the time to first delta")
	fs.IntVar(&o.concurrency, "c", 16, "concurrency of the throughput run")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "length of each throughput run")
	fs.IntVar(&o.generations, "generations", 300, "open generations for the memory figure")
	_ = fs.Parse(os.Args[1:])
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "turnbench:", err)
		os.Exit(1)
	}
}

// opts are the run's settings.
type opts struct {
	bin, dsn                   string
	turns, concurrency         int
	generations                int
	duration                   time.Duration
	work, base, token, mockURL string
	proxyURL                   string
	pid                        int
	body                       []byte // the upstream request Phaseflow sends, replayed by the other arms
}

const turnText = "Draft a momentum strategy for BTC (turnbench)"

func run(o opts) error {
	var err error
	if o.work, err = os.MkdirTemp("", "turnbench-"); err != nil {
		return err
	}
	defer os.RemoveAll(o.work)
	if o.bin == "" {
		if o.bin, err = bench.Build(o.work); err != nil {
			return err
		}
	}
	stop, err := o.start()
	defer stop()
	if err != nil {
		return err
	}
	if err := o.captureBody(); err != nil {
		return err
	}
	ttfd, err := o.firstDeltas()
	if err != nil {
		return err
	}
	pfRate, pfCPU, err := o.throughput(o.phaseflowTurn, true)
	if err != nil {
		return err
	}
	proxyRate, _, err := o.throughput(o.proxiedTurn(o.proxyURL), false)
	if err != nil {
		return err
	}
	perGen, err := o.memoryPerGeneration()
	if err != nil {
		return err
	}
	o.report(ttfd, pfRate, proxyRate, pfCPU, perGen)
	return nil
}

// start runs the scripted upstream, the proxy and Phaseflow; stop ends them.
func (o *opts) start() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	mock := exec.Command(o.bin, "mock-upstream", "--addr", "127.0.0.1:0")
	line, kill, err := startLine(mock, "PHASEFLOW_UPSTREAM_URL=")
	stops = append(stops, kill)
	if err != nil {
		return stop, err
	}
	o.mockURL = line
	target, err := url.Parse(strings.TrimSuffix(o.mockURL, "/v1"))
	if err != nil {
		return stop, err
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return stop, err
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stops = append(stops, func() { _ = srv.Close() })
	o.proxyURL = "http://" + ln.Addr().String() + "/v1"

	secret := "turnbench-secret-0123456789abcdef0123456789abcdef"
	env := append(os.Environ(), "PHASEFLOW_DATA_DIR="+o.work, "PHASEFLOW_DATABASE_URL="+o.dsn, "PHASEFLOW_UPSTREAM_URL="+o.mockURL,
		"PHASEFLOW_JWT_SECRET="+secret, "PHASEFLOW_ADDR=127.0.0.1:0", "PHASEFLOW_LOG_LEVEL=warn", "PHASEFLOW_MAX_TURNS=2000",
		"PHASEFLOW_TURN_TIMEOUT=10m", "GOMAXPROCS=1")
	serve := exec.Command(o.bin, "serve")
	serve.Env = env
	addr, kill, err := startLine(serve, "phaseflow listening on ")
	stops = append(stops, kill)
	if err != nil {
		return stop, err
	}
	if !strings.HasPrefix(addr, "http") {
		addr = "http://" + addr
	}
	o.base, o.pid = addr, serve.Process.Pid
	o.token, err = bench.Token(o.bin, env)
	return stop, err
}

// startLine starts cmd and waits for a line of its output (stdout or stderr) starting with
// prefix: the rest of that line; kill ends it.
func startLine(cmd *exec.Cmd, prefix string) (string, func(), error) {
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return "", func() {}, err
	}
	kill := func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait(); _ = w.Close() }
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				select {
				case found <- strings.TrimSpace(rest):
				default:
				}
			}
		}
	}()
	select {
	case line := <-found:
		return line, kill, nil
	case <-time.After(30 * time.Second):
		return "", kill, fmt.Errorf("%s printed no %q within 30s", cmd.Path, prefix)
	}
}

// captureBody runs one turn and keeps the upstream request it sent.
func (o *opts) captureBody() error {
	if _, err := o.phaseflowTurn(); err != nil {
		return err
	}
	resp, err := http.Get(strings.TrimSuffix(o.mockURL, "/v1") + "/_scripted/requests")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var rec struct {
		Requests []struct {
			Body json.RawMessage `json:"body"`
		} `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil || len(rec.Requests) == 0 {
		return fmt.Errorf("the upstream recorded no request: %v", err)
	}
	o.body = rec.Requests[len(rec.Requests)-1].Body
	return nil
}

// phaseflowTurn posts a turn with a streamed answer: the time to its first content delta.
func (o *opts) phaseflowTurn() (time.Duration, error) {
	body := strings.NewReader(`{"text":` + strconv.Quote(turnText) + `,"locale":"en"}`)
	req, err := http.NewRequest(http.MethodPost, o.base+"/api/v1/messages", body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+o.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	return firstAndDrain(req, "event: content_delta", "event: completed")
}

// proxiedTurn replays the captured request to base (the upstream, directly or through the
// proxy): the time to its first text delta.
func (o *opts) proxiedTurn(base string) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		req, err := http.NewRequest(http.MethodPost, base+"/responses", bytes.NewReader(o.body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		return firstAndDrain(req, "event: response.output_text.delta", "event: response.completed")
	}
}

// firstAndDrain sends req and reads its stream: the time to the first line first, after
// reading to the line end (or the stream's end).
func firstAndDrain(req *http.Request, first, end string) (time.Duration, error) {
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("%s %s: %s %s", req.Method, req.URL, resp.Status, b)
	}
	var took time.Duration
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if took == 0 && line == first {
			took = time.Since(start)
		}
		if line == end {
			break
		}
	}
	if took == 0 {
		return 0, fmt.Errorf("%s: no %q", req.URL, first)
	}
	return took, nil
}

// firstDeltas times the first delta of each arm, interleaved turn by turn: medians.
func (o *opts) firstDeltas() (map[string]time.Duration, error) {
	arms := []struct {
		name string
		turn func() (time.Duration, error)
	}{{"direct", o.proxiedTurn(o.mockURL)}, {"proxy", o.proxiedTurn(o.proxyURL)}, {"phaseflow", o.phaseflowTurn}}
	samples := map[string][]time.Duration{}
	for range o.turns {
		for _, a := range arms {
			d, err := a.turn()
			if err != nil {
				return nil, err
			}
			samples[a.name] = append(samples[a.name], d)
		}
	}
	out := map[string]time.Duration{}
	for name, s := range samples {
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		out[name] = s[len(s)/2]
	}
	return out, nil
}

// throughput runs turn in a closed loop at the concurrency for the duration: turns a
// second, and (for Phaseflow) its CPU per turn.
func (o *opts) throughput(turn func() (time.Duration, error), measureCPU bool) (float64, time.Duration, error) {
	var done atomic.Int64
	var failed atomic.Value
	cpu0 := bench.CPU(o.pid)
	start := time.Now()
	deadline := start.Add(o.duration)
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := turn(); err != nil {
					failed.Store(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if err, ok := failed.Load().(error); ok {
		return 0, 0, err
	}
	n := done.Load()
	var perTurn time.Duration
	if measureCPU && n > 0 {
		perTurn = (bench.CPU(o.pid) - cpu0) / time.Duration(n)
	}
	return float64(n) / took.Seconds(), perTurn, nil
}

// memoryPerGeneration opens generations that never answer, each followed by its streamed
// post, and divides the growth of Phaseflow's resident memory by their number.
func (o *opts) memoryPerGeneration() (float64, error) {
	time.Sleep(time.Second)
	before := bench.RSSKB(o.pid)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var opened sync.WaitGroup
	errs := make(chan error, o.generations)
	for range o.generations {
		opened.Add(1)
		go func() {
			body := strings.NewReader(`{"text":"Draft a strategy [[fault:stall]]","locale":"en"}`)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.base+"/api/v1/messages", body)
			req.Header.Set("Authorization", "Bearer "+o.token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			opened.Done()
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	opened.Wait()
	time.Sleep(2 * time.Second)
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(bench.RSSKB(o.pid)-before) / float64(o.generations), nil
}

// report prints the figures as a Markdown table.
func (o *opts) report(ttfd map[string]time.Duration, pfRate, proxyRate float64, cpu time.Duration, perGen float64) {
	store := "SQLite"
	if o.dsn != "" {
		store = "PostgreSQL"
	}
	rev, _ := exec.Command("git", "describe", "--always", "--dirty").Output()
	host, _ := os.Hostname()
	fmt.Printf("turnbench of %s on %s (%d cores, %s/%s), %s, Phaseflow at GOMAXPROCS=1, %s\n\n",
		strings.TrimSpace(string(rev)), host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, store, time.Now().UTC().Format(time.DateOnly))
	fmt.Println("| figure | direct | bare proxy | Phaseflow | Phaseflow ÷ proxy |\n|---|---|---|---|---|")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Printf("| time to first delta, median of %d | %s | %s | %s | |\n", o.turns, ms(ttfd["direct"]), ms(ttfd["proxy"]), ms(ttfd["phaseflow"]))
	fmt.Printf("| added to the direct call | – | %s | %s | %.2f |\n", ms(ttfd["proxy"]-ttfd["direct"]), ms(ttfd["phaseflow"]-ttfd["direct"]),
		float64(ttfd["phaseflow"]-ttfd["direct"])/float64(max(ttfd["proxy"]-ttfd["direct"], time.Microsecond)))
	fmt.Printf("| turns a second at c=%d | – | %.1f | %.1f | %.2f |\n", o.concurrency, proxyRate, pfRate, pfRate/proxyRate)
	fmt.Printf("| Phaseflow's CPU per turn | | | %v | |\n", cpu.Round(time.Microsecond))
	fmt.Printf("| memory per open generation (%d) | | | %.1f KiB | |\n", o.generations, perGen)
}
