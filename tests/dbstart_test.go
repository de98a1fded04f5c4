package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/api/auth"
)

// TestReplicaWaitsForItsDatabase is a rolling deploy that meets a database restart: the
// replica starts while PostgreSQL is down. It must say it is waiting, come up once the
// database is back within the outage grace, and serve a turn, instead of exiting and
// leaving its supervisor to restart it with a growing back-off.
func TestReplicaWaitsForItsDatabase(t *testing.T) {
	pg := newPGCluster(t)
	dsn := pg.createDatabase("phaseflow")
	pg.stop("fast")
	_, mockURL := start(t, "PHASEFLOW_UPSTREAM_URL=", nil, "mock-upstream", "--addr", "127.0.0.1:0")
	p := launch(t, []string{
		"PHASEFLOW_ADDR=127.0.0.1:0",
		"PHASEFLOW_DATA_DIR=" + t.TempDir(),
		"PHASEFLOW_DATABASE_URL=" + dsn,
		"PHASEFLOW_JWT_SECRET=" + testSecret,
		"PHASEFLOW_UPSTREAM_URL=" + mockURL,
		"PHASEFLOW_DB_OUTAGE_GRACE=30s",
	}, "serve")
	waited := waitUntil(10*time.Second, func() bool {
		return strings.Contains(p.stderr.String(), "database unreachable at start; waiting for it")
	})
	if !waited {
		t.Fatalf("no line saying the replica waits for its database; stderr:\n%s", p.stderr.String())
	}
	pg.start()
	s := &server{t: t, base: p.waitFor(t, "phaseflow listening on ", 20*time.Second), proc: p, auth: auth.New([]byte(testSecret), "", "")}
	tok := s.token("late")
	sess := s.newSession(tok, "en")
	ctx := ctxFor(t, 30*time.Second)
	if err := streamTurn(ctx, s.base, tok, sess); err != nil {
		t.Fatalf("the first turn after the database came up: %v", err)
	}
	if resp := s.call(ctx, http.MethodGet, "/healthz", "", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz = %d", resp.StatusCode)
	}
}
