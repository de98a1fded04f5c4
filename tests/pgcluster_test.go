package tests

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// pgCluster is a throwaway PostgreSQL server of the test's own (initdb into a temporary
// folder, on a free port), so a test can stop and start its database without touching the
// shared one. As root it runs the server as the postgres user, since PostgreSQL refuses
// to run as root.
type pgCluster struct {
	t       *testing.T
	bin     string // the folder of initdb, pg_ctl, postgres
	dir     string // data folder and socket folder
	port    int
	runAs   string // "postgres" when the test runs as root
	stopped bool
}

// newPGCluster creates, starts and registers the removal of a cluster. It fails the test
// (in CI) or skips it (locally) when PostgreSQL's server binaries are not installed.
func newPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		msg := "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb) for a throwaway cluster"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	slices.Sort(bins)
	c := &pgCluster{t: t, bin: filepath.Dir(bins[len(bins)-1]), port: freePort(t)}
	dir, err := os.MkdirTemp("", "phaseflow-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() { c.stop("immediate"); os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		c.runAs = "postgres"
		c.chown(dir)
	}
	c.run("initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
	c.start()
	return c
}

func (c *pgCluster) data() string { return filepath.Join(c.dir, "data") }

// chown gives dir to the postgres user.
func (c *pgCluster) chown(dir string) {
	u, err := user.Lookup(c.runAs)
	if err != nil {
		c.t.Fatalf("pg cluster: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		c.t.Fatalf("pg cluster: %v", err)
	}
}

// run runs one of the server's programs, as postgres when the test is root.
func (c *pgCluster) run(name string, args ...string) {
	c.t.Helper()
	prog := filepath.Join(c.bin, name)
	cmd := exec.Command(prog, args...)
	if c.runAs != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.runAs, "--", prog}, args...)...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("pg cluster: %s %v: %v\n%s", name, args, err, out)
	}
}

// start starts the server and waits until it accepts connections.
func (c *pgCluster) start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", c.port, c.dir)
	c.run("pg_ctl", "-D", c.data(), "-o", opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "30", "start")
	c.stopped = false
}

// stop stops the server: "fast" ends sessions and shuts down cleanly (a restart), "immediate"
// is a crash. Stopping a stopped server does nothing.
func (c *pgCluster) stop(mode string) {
	if c.stopped {
		return
	}
	c.stopped = true
	prog := filepath.Join(c.bin, "pg_ctl")
	args := []string{"-D", c.data(), "-m", mode, "-w", "stop"}
	cmd := exec.Command(prog, args...)
	if c.runAs != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.runAs, "--", prog}, args...)...)
	}
	_ = cmd.Run()
}

// dsn is the URL of database db on the cluster.
func (c *pgCluster) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// createDatabase makes an empty database.
func (c *pgCluster) createDatabase(name string) string {
	c.t.Helper()
	db, err := sql.Open("postgres", c.dsn("postgres"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE DATABASE ` + name); err != nil {
		c.t.Fatalf("pg cluster: create database: %v", err)
	}
	return c.dsn(name)
}

// freePort returns a TCP port nobody listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitUntil polls cond every 50ms until it holds or d passes.
func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}
