// Command followers measures what a Phaseflow replica holds for idle followers: clients of
// GET /api/v1/messages/{id}/events waiting on generations that send nothing, so that only
// heartbeats flow. It starts one `phaseflow serve` (SQLite, the built-in scripted upstream),
// a few generations that stall, and client processes of its own that open the followers
// from several loopback source addresses (each process within its own file limit), holds
// them through several heartbeat intervals, and prints the server's memory and CPU per
// follower, the CPU its heartbeats take, and how fast a new turn's first delta and
// /healthz answer while they are held; then what 100,000 would take.
//
//	go run ./tools/followers -n 15000
//
// The figures of the last run are in docs/performance.md.
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
	"os"
	"os/exec"
	"path/filepath"
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
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "client":
			os.Exit(client(os.Args[2:]))
		case "floor":
			os.Exit(floor(os.Args[2:]))
		}
	}
	os.Exit(run(os.Args[1:]))
}

// opts are the benchmark's settings.
type opts struct {
	n, procs, messages int
	heartbeat          time.Duration
	beats              int
	bin, addr          string
	floor              bool
}

func run(args []string) int {
	fs := flag.NewFlagSet("followers", flag.ContinueOnError)
	o := opts{}
	fs.IntVar(&o.n, "n", 15000, "followers to open")
	fs.IntVar(&o.procs, "procs", 3, "client processes (each opens n/procs from its own 127.0.0.x)")
	fs.IntVar(&o.messages, "messages", 10, "stalled generations the followers follow")
	fs.DurationVar(&o.heartbeat, "heartbeat", 15*time.Second, "the server's heartbeat interval")
	fs.IntVar(&o.beats, "beats", 4, "heartbeat intervals to hold the followers idle")
	fs.StringVar(&o.bin, "bin", "", "the phaseflow binary (default: built from this checkout)")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:18300", "where the server listens")
	fs.BoolVar(&o.floor, "floor", false, "measure a bare Go server instead: a goroutine and a ticker per connection writing the same heartbeat")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := measure(o); err != nil {
		fmt.Fprintln(os.Stderr, "followers:", err)
		return 1
	}
	return 0
}

// figures are what a run measured.
type figures struct {
	followers          int
	idleKB, heldKB     int64
	idleRate           float64       // the server's own CPU with no followers, in cores
	heldFor, heldCPU   time.Duration // CPU above idle while the followers were held
	slabIdle, slabHeld int64         // the kernel's slab memory, KiB
	ttfdIdle, ttfdHeld time.Duration // a new turn's first delta (0: a bare server)
	healthIdle, health time.Duration
}

// measure starts the server, takes its figures idle and then with the followers held, and
// reports them.
func measure(o opts) error {
	work, err := os.MkdirTemp("", "followers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	start := startPhaseflow
	if o.floor {
		start = startFloor
	}
	t, err := start(o, work)
	if t.stop != nil {
		defer t.stop()
	}
	if err != nil {
		return err
	}
	var f figures
	if err := measureIdle(t, &f); err != nil {
		return err
	}
	stop, err := openFollowers(o, t, &f)
	defer stop()
	if err != nil {
		return err
	}
	if err := measureHeld(o, t, &f); err != nil {
		return err
	}
	report(o, f)
	return nil
}

// measureIdle takes the server's figures before any follower opens.
func measureIdle(t target, f *figures) error {
	time.Sleep(2 * time.Second)
	f.idleKB, f.slabIdle = bench.RSSKB(t.pid), bench.SlabKB()
	cpu0, t0 := bench.CPU(t.pid), time.Now()
	time.Sleep(5 * time.Second)
	f.idleRate = (bench.CPU(t.pid) - cpu0).Seconds() / time.Since(t0).Seconds() // its own work: sweeps, timers
	f.healthIdle = healthLatency(t.base, 20)
	if t.phaseflow {
		d, err := firstDelta(context.Background(), t.base, t.tok)
		if err != nil {
			return err
		}
		f.ttfdIdle = d
	}
	fmt.Printf("server idle: %d KiB, %.2f%% of a core\n", f.idleKB, 100*f.idleRate)
	return nil
}

// openFollowers starts the client processes, each opening its share from its own
// address, and waits until they are all open; stop ends the clients.
func openFollowers(o opts, t target, f *figures) (stop func(), err error) {
	var clients []*exec.Cmd
	stop = func() {
		for _, c := range clients {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	var ready sync.WaitGroup
	var open atomic.Int64
	opened := time.Now()
	for i := range o.procs {
		share := o.n / o.procs
		if i < o.n%o.procs {
			share++
		}
		c := exec.Command(os.Args[0], "client", "-base", t.base, "-token", t.tok, "-from", fmt.Sprintf("127.0.0.%d", i+2),
			"-n", strconv.Itoa(share), "-messages", strings.Join(t.msgs, ","))
		out, err := c.StdoutPipe()
		if err != nil {
			return stop, err
		}
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			return stop, err
		}
		clients = append(clients, c)
		ready.Add(1)
		go countOpen(out, &open, ready.Done)
	}
	ready.Wait()
	f.followers = int(open.Load())
	fmt.Printf("%d followers open in %v\n", f.followers, time.Since(opened).Round(time.Millisecond))
	return stop, nil
}

// countOpen adds up a client's "open N" and calls done once, at the first or at its end.
func countOpen(out io.Reader, open *atomic.Int64, done func()) {
	once := sync.OnceFunc(done)
	defer once()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "open "); ok {
			v, _ := strconv.ParseInt(n, 10, 64)
			open.Add(v)
			once()
		}
	}
}

// measureHeld holds the followers idle through whole heartbeat intervals, then times a
// new turn and /healthz while they are still held.
func measureHeld(o opts, t target, f *figures) error {
	time.Sleep(3 * time.Second)
	f.heldKB, f.slabHeld = medianRSS(t.pid), bench.SlabKB()
	cpu0, t0 := bench.CPU(t.pid), time.Now()
	time.Sleep(time.Duration(o.beats) * o.heartbeat)
	f.heldFor = time.Since(t0)
	f.heldCPU = bench.CPU(t.pid) - cpu0 - time.Duration(f.idleRate*float64(f.heldFor))
	f.health = healthLatency(t.base, 20)
	if t.phaseflow {
		d, err := firstDelta(context.Background(), t.base, t.tok)
		if err != nil {
			return err
		}
		f.ttfdHeld = d
	}
	return nil
}

// report prints the figures as a table, and what 100,000 followers would take.
func report(o opts, f figures) {
	n := float64(f.followers)
	perFollower := float64(f.heldKB-f.idleKB) / n
	perBeat := time.Duration(float64(f.heldCPU) / (n * f.heldFor.Seconds() / o.heartbeat.Seconds()))
	kernel := float64(f.slabHeld-f.slabIdle) / (2 * n) // both ends of each connection are on this machine
	what := "phaseflow"
	if o.floor {
		what = "bare server"
	}
	fmt.Printf("\n| figure (%s) | %d idle followers, heartbeat %v, GOMAXPROCS=1 |\n|---|---|\n", what, f.followers, o.heartbeat)
	fmt.Printf("| server RSS idle, held | %d KiB, %d KiB |\n", f.idleKB, f.heldKB)
	fmt.Printf("| memory per follower | %.2f KiB |\n", perFollower)
	fmt.Printf("| kernel memory per connection (slab, one end) | %.2f KiB |\n", kernel)
	fmt.Printf("| CPU above idle while held, over %v | %v (%.2f%% of a core) |\n", f.heldFor.Round(time.Second),
		f.heldCPU.Round(time.Millisecond), 100*f.heldCPU.Seconds()/f.heldFor.Seconds())
	fmt.Printf("| CPU per heartbeat | %v |\n", perBeat.Round(10*time.Nanosecond))
	if f.ttfdIdle > 0 {
		fmt.Printf("| a new turn's first delta, idle and held | %v, %v |\n", f.ttfdIdle.Round(100*time.Microsecond), f.ttfdHeld.Round(100*time.Microsecond))
	}
	fmt.Printf("| /healthz on a new connection, idle and held (median of 20) | %v, %v |\n", f.healthIdle.Round(time.Microsecond), f.health.Round(time.Microsecond))
	const target = 100000
	fmt.Printf("\nAt %d followers: memory %.0f MiB above idle (and %.0f MiB of the kernel's); heartbeats %.2f%% of a core; a file limit of at least %d.\n",
		target, perFollower*target/1024, kernel*target/1024, 100*float64(perBeat)*target/o.heartbeat.Seconds()/1e9, target+256)
}

// target is the server under measure.
type target struct {
	pid       int // the server's process, for its /proc figures
	base, tok string
	msgs      []string // the stalled generations to follow
	stop      func()
	phaseflow bool // it runs turns (the time to a first delta is measured)
}

// startPhaseflow starts `phaseflow serve` on SQLite with the built-in scripted upstream, and
// the stalled generations its followers follow.
func startPhaseflow(o opts, work string) (target, error) {
	ctx := context.Background()
	if o.bin == "" {
		var err error
		if o.bin, err = bench.Build(work); err != nil {
			return target{}, err
		}
	}
	secret := "followers-bench-secret-0123456789abcdef01234567"
	env := append(os.Environ(), "PHASEFLOW_DATA_DIR="+work, "PHASEFLOW_DATABASE_URL=", "PHASEFLOW_UPSTREAM_URL=",
		"PHASEFLOW_JWT_SECRET="+secret, "PHASEFLOW_ADDR="+o.addr, "PHASEFLOW_LOG_LEVEL=warn",
		"PHASEFLOW_HEARTBEAT_INTERVAL="+o.heartbeat.String(), "PHASEFLOW_IDLE_TIMEOUT=2h", "PHASEFLOW_TURN_TIMEOUT=2h",
		"PHASEFLOW_MAX_TURNS=1000", "GOMAXPROCS=1")
	srv := exec.Command(o.bin, "serve")
	srv.Env = env
	logFile, err := os.Create(filepath.Join(work, "serve.log"))
	if err != nil {
		return target{}, err
	}
	srv.Stderr = logFile // the turns the stop interrupts are logged there, not here
	if err := srv.Start(); err != nil {
		logFile.Close()
		return target{}, err
	}
	t := target{pid: srv.Process.Pid, base: "http://" + o.addr, phaseflow: true}
	t.stop = func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait(); logFile.Close() }
	if err := waitHealthy(t.base); err != nil {
		return t, err
	}
	if t.tok, err = bench.Token(o.bin, env); err != nil {
		return t, err
	}
	for range o.messages {
		id, err := startMessage(ctx, t.base, t.tok, "Draft a BTC momentum strategy [[fault:stall]]")
		if err != nil {
			return t, err
		}
		t.msgs = append(t.msgs, id)
	}
	return t, nil
}

// startFloor starts the bare server (floor) as a process of this binary.
func startFloor(o opts, _ string) (target, error) {
	srv := exec.Command(os.Args[0], "floor", "-addr", o.addr, "-heartbeat", o.heartbeat.String())
	srv.Env = append(os.Environ(), "GOMAXPROCS=1")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return target{}, err
	}
	t := target{pid: srv.Process.Pid, base: "http://" + o.addr, tok: "-", msgs: []string{"floor"}}
	t.stop = func() { _ = srv.Process.Kill(); _ = srv.Wait() }
	return t, waitHealthy(t.base)
}

// medianRSS is the median of a few samples of a process's resident memory.
func medianRSS(pid int) int64 {
	var s []int64
	for range 7 {
		s = append(s, bench.RSSKB(pid))
		time.Sleep(300 * time.Millisecond)
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func waitHealthy(base string) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("the server did not answer /healthz within 30s")
}

// startMessage creates a session and posts text in it; the message's id.
func startMessage(ctx context.Context, base, tok, text string) (string, error) {
	var sess struct{ ID string }
	if err := call(ctx, base+"/api/v1/sessions", tok, map[string]string{"locale": "en"}, &sess); err != nil {
		return "", err
	}
	var msg struct {
		MessageID string `json:"message_id"`
	}
	if err := call(ctx, base+"/api/v1/sessions/"+sess.ID+"/messages", tok, map[string]string{"text": text}, &msg); err != nil {
		return "", err
	}
	return msg.MessageID, nil
}

func call(ctx context.Context, url, tok string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// firstDelta posts a turn with a streamed answer and times its first content_delta.
func firstDelta(ctx context.Context, base, tok string) (time.Duration, error) {
	var sess struct{ ID string }
	if err := call(ctx, base+"/api/v1/sessions", tok, map[string]string{"locale": "en"}, &sess); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/sessions/"+sess.ID+"/messages",
		strings.NewReader(`{"text":"Draft a BTC momentum strategy"}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: content_delta" {
			return time.Since(start), nil
		}
	}
	return 0, fmt.Errorf("no content_delta: %v", sc.Err())
}

// healthLatency is the median time of n GET /healthz on fresh connections.
func healthLatency(base string, n int) time.Duration {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var ds []time.Duration
	for range n {
		t := time.Now()
		if resp, err := c.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			ds = append(ds, time.Since(t))
		}
	}
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// client opens n followers from one source address and holds them, reading and dropping
// what comes; it prints "open N" once they are all open.
func client(args []string) int {
	fs := flag.NewFlagSet("followers client", flag.ContinueOnError)
	base := fs.String("base", "", "")
	tok := fs.String("token", "", "")
	from := fs.String("from", "127.0.0.2", "")
	n := fs.Int("n", 0, "")
	messages := fs.String("messages", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	msgs := strings.Split(*messages, ",")
	host := strings.TrimPrefix(*base, "http://")
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(*from)}, Timeout: 10 * time.Second}
	var open atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range *n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := d.Dial("tcp", host)
			if err != nil {
				<-sem
				fmt.Fprintln(os.Stderr, "dial:", err)
				return
			}
			fmt.Fprintf(c, "GET /api/v1/messages/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", msgs[i%len(msgs)], *tok)
			rd := bufio.NewReaderSize(c, 512)
			line, err := rd.ReadString('\n')
			<-sem
			if err != nil || !strings.Contains(line, " 200 ") {
				fmt.Fprintf(os.Stderr, "follower: %q %v\n", line, err)
				return
			}
			open.Add(1)
			_, _ = io.Copy(io.Discard, rd) // hold it, dropping the frames and heartbeats
		}()
	}
	for open.Load() < int64(*n) {
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("open %d\n", open.Load())
	wg.Wait()
	return 0
}

// floor is the bare server: it answers /healthz, and any other request with an event
// stream that sends a heartbeat of Phaseflow's size every interval, from a goroutine and a
// ticker of the connection's own: what the simplest Go server pays for the same followers.
func floor(args []string) int {
	fs := flag.NewFlagSet("followers floor", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:18300", "")
	heartbeat := fs.Duration("heartbeat", 15*time.Second, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			return 1
		}
		go floorConn(c, *heartbeat)
	}
}

// floorConn serves one connection of the bare server.
func floorConn(c net.Conn, heartbeat time.Duration) {
	defer c.Close()
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	if err != nil {
		return
	}
	for { // the request's headers
		h, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		if h == "\r\n" {
			break
		}
	}
	if strings.Contains(line, "/healthz") {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"); err != nil {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for range tick.C {
		data, _ := json.Marshal(map[string]any{"message_id": "0193f2a4-8c1e-7d3a-9b2f-5e6d7c8b9a01",
			"request_id": "0193f2a4-8c1e-7d3a-9b2f-5e6d7c8b9a02", "ts": time.Now().UnixMilli(), "last_event_id": 3})
		frame := fmt.Sprintf("event: heartbeat\ndata: %s\n\n", data)
		if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(frame), frame); err != nil {
			return
		}
	}
}
