package tests

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/mcpcontext"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// binary is the phaseflow binary built once for the whole package.
var binary string

// testSecret signs the tokens the tests use; the server under test is given the same one.
const testSecret = "e2e-test-secret-0123456789abcdef-0123456789"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "phaseflow-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "phaseflow")
	build := exec.Command("go", "build", "-race", "-o", binary, "../cmd/phaseflow")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build phaseflow:", err)
		os.Exit(1)
	}
	// Every answer a test receives through the default client is checked against the
	// OpenAPI document (openapi_check_test.go).
	http.DefaultClient.Transport = checkingTransport{base: http.DefaultTransport}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running phaseflow process.
type proc struct {
	name   string // the subcommand, for messages
	cmd    *exec.Cmd
	lines  chan string // stdout lines
	stderr *syncWriter
	done   chan struct{} // closed when the process has exited
	err    error         // its exit error, once done is closed
}

// start runs the binary with args and env and returns once it printed a line starting
// with ready (the rest of that line is returned).
func start(t testing.TB, ready string, env []string, args ...string) (*proc, string) {
	t.Helper()
	return startBinary(t, binary, ready, env, args...)
}

// startBinary is start with another build of phaseflow.
func startBinary(t testing.TB, bin, ready string, env []string, args ...string) (*proc, string) {
	t.Helper()
	p := launchBinary(t, bin, env, args...)
	return p, p.waitFor(t, ready, 20*time.Second)
}

// launch starts the binary with args and env added to the test's environment, reading its
// stdout lines into p.lines, and stops it when the test ends. It does not wait for anything.
func launch(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	return launchBinary(t, binary, env, args...)
}

// launchBinary is launch with another build of phaseflow.
func launchBinary(t testing.TB, bin string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: args[0], cmd: cmd, lines: make(chan string, 64), stderr: &syncWriter{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default: // nobody reads later lines
			}
		}
		close(p.lines)
	}()
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// waitFor reads p's stdout until a line starts with ready and returns the rest of it,
// failing the test when p exits first or d passes.
func (p *proc) waitFor(t testing.TB, ready string, d time.Duration) string {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s exited before it was ready; stderr:\n%s", p.name, p.stderr.String())
			}
			if rest, found := strings.CutPrefix(line, ready); found {
				return strings.TrimSpace(rest)
			}
		case <-timeout:
			t.Fatalf("%s not ready after %s; stderr:\n%s", p.name, d, p.stderr.String())
		}
	}
}

// stop sends SIGTERM and waits for the process to exit.
func (p *proc) stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("process did not stop within 30s after SIGTERM")
	}
}

// testMCPServers are the MCP servers the server under test is configured with; the scripted
// upstream plays their calls, so nothing listens at these URLs.
const testMCPServers = "strategy_engine=http://127.0.0.1:9/strategy,risk_lab=http://127.0.0.1:9/risk,deployer=http://127.0.0.1:9/deploy"

// server is a phaseflow server under test with its own database and scripted upstream.
type server struct {
	t       testing.TB
	base    string // http://127.0.0.1:PORT
	proc    *proc
	mockURL string
	dsn     string
	env     []string
	auth    *auth.Authority
	bin     string // the build of phaseflow it runs
}

// startServer starts a mock upstream and a server on a fresh PostgreSQL database. extraEnv
// may override the defaults (e.g. PHASEFLOW_SHUTDOWN_GRACE).
func startServer(t testing.TB, extraEnv ...string) *server {
	t.Helper()
	return startServerWith(t, func(string) []string { return extraEnv })
}

// startServerWith is startServer with settings that depend on the mock's URL (its MCP
// servers, an upstreams file pointing at it).
func startServerWith(t testing.TB, extra func(mockURL string) []string) *server {
	t.Helper()
	return startServerOn(t, binary, extra)
}

// startServerOn is startServerWith with another build of phaseflow for the server (the
// mock upstream is the test's usual build).
func startServerOn(t testing.TB, bin string, extra func(mockURL string) []string) *server {
	t.Helper()
	_, mockURL := start(t, "PHASEFLOW_UPSTREAM_URL=", nil, "mock-upstream", "--addr", "127.0.0.1:0")
	extraEnv := extra(mockURL)
	dsn := "" // SQLite in the data dir, the zero-set-up default
	if !onSQLite(t) {
		dsn = storetest.PostgresDSN(t)
	}
	env := append([]string{
		"PHASEFLOW_ADDR=127.0.0.1:0",
		"PHASEFLOW_DATA_DIR=" + t.TempDir(),
		"PHASEFLOW_DATABASE_URL=" + dsn,
		"PHASEFLOW_JWT_SECRET=" + testSecret,
		"PHASEFLOW_UPSTREAM_URL=" + mockURL,
		"PHASEFLOW_UPSTREAM_MODEL=scripted-model",
		"PHASEFLOW_HEARTBEAT_INTERVAL=200ms",
		"PHASEFLOW_SHUTDOWN_GRACE=5s",
		"PHASEFLOW_LEASE_TTL=2s", // a crashed server's turns end within seconds
		"PHASEFLOW_MCP_SERVERS=" + testMCPServers,
	}, extraEnv...)
	p, addr := startBinary(t, bin, "phaseflow listening on ", env, "serve")
	return &server{t: t, base: addr, proc: p, mockURL: mockURL, dsn: dsn, env: env, auth: auth.New([]byte(testSecret), "", ""), bin: bin}
}

// sqliteRuns holds the names of the subtests eachStore runs on SQLite.
var sqliteRuns sync.Map

// eachStore runs fn twice, as the subtests postgres and sqlite: a server fn (or a subtest
// of it) starts runs on that store. Every end-to-end test that needs neither several
// replicas on one database nor a database outage runs on both, since SQLite is what a
// newcomer gets.
func eachStore(t *testing.T, fn func(t *testing.T)) {
	t.Run("postgres", fn)
	t.Run("sqlite", func(t *testing.T) {
		sqliteRuns.Store(t.Name(), true)
		fn(t)
	})
}

// onSQLite reports whether t runs inside eachStore's sqlite subtest.
func onSQLite(t testing.TB) bool {
	for name := t.Name(); ; {
		if _, ok := sqliteRuns.Load(name); ok {
			return true
		}
		i := strings.LastIndex(name, "/")
		if i < 0 {
			return false
		}
		name = name[:i]
	}
}

// crashAndRestart kills the server without a shutdown (as a crash or a lost machine would)
// and starts a new one on the same database and upstream.
func (s *server) crashAndRestart() {
	s.t.Helper()
	_ = s.proc.cmd.Process.Kill()
	<-s.proc.done
	p, addr := startBinary(s.t, s.bin, "phaseflow listening on ", s.env, "serve")
	s.proc, s.base = p, addr
}

// adminToken signs an admin token for sub.
func (s *server) adminToken(sub string) string {
	s.t.Helper()
	tok, err := s.auth.Sign(sub, auth.RoleAdmin, time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// mcpVerifier is what an MCP server runs: a verifier over the JWK Set the server publishes
// at GET /.well-known/jwks.json, fetched without any credential.
func (s *server) mcpVerifier() *mcpcontext.Verifier {
	s.t.Helper()
	resp := s.call(ctxFor(s.t, 10*time.Second), http.MethodGet, "/.well-known/jwks.json", "", nil, nil)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET /.well-known/jwks.json: %d", resp.StatusCode)
	}
	v, err := mcpcontext.NewVerifier([]byte(readAllString(s.t, resp)))
	if err != nil {
		s.t.Fatal(err)
	}
	return v
}

// token signs a user token for sub.
func (s *server) token(sub string) string {
	s.t.Helper()
	tok, err := s.auth.Sign(sub, auth.RoleUser, time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
