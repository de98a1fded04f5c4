package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/phaseflow/phaseflow/api"
	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/mcpcontext"
	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store/storetest"
	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/upstream/scripted"
)

// stack is the whole server in-process, so the test can check that every goroutine a
// stream starts ends with it.
type stack struct {
	srv     *httptest.Server
	api     *api.Server
	auth    *auth.Authority
	orch    *orchestration.Orchestrator
	stop    func(grace time.Duration)
	stopped sync.Once
}

// close shuts the stack down as phaseflow serve does, running turns given 10 s to finish.
func (s *stack) close() { s.shutdown(10 * time.Second) }

// shutdown shuts the stack down once: running turns get grace to finish (then they end
// interrupted), the event log is drained, the event streams end, and the parts close.
func (s *stack) shutdown(grace time.Duration) { s.stopped.Do(func() { s.stop(grace) }) }

// newStack builds the stack; mods may change the parts' dependencies before they are built.
func newStack(t *testing.T, mods ...func(*orchestration.Deps, *api.Deps)) *stack {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := storetest.SQLite(t)
	up, err := scripted.Listen(context.Background(), "127.0.0.1:0", scripted.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	client := upstream.New(upstream.Config{BaseURL: up.URL()})
	log := eventlog.New(st, "replica-api-test", logger, eventlog.Options{})
	a := auth.New([]byte("api-test-secret-0123456789abcdef"), "", "")
	key, err := mcpcontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	mcpSigner, err := mcpcontext.NewSigner(key, "")
	if err != nil {
		t.Fatal(err)
	}
	od := orchestration.Deps{
		Store: st, Log: log, Upstream: client, Skills: skills.New(), Handlers: handlers.New(handlers.Criteria{}), Signer: mcpSigner, Logger: logger,
	}
	ad := api.Deps{
		Config: api.Config{HeartbeatInterval: 50 * time.Millisecond, MaxBodyBytes: 1 << 20},
		Auth:   a, Store: st, Logger: logger,
		Follow: func(id string, after, last int64) api.Cursor { return log.Follow(id, after, last) },
	}
	for _, m := range mods {
		m(&od, &ad)
	}
	orch := orchestration.New(orchestration.Config{Provider: "scripted", Model: "m", IdleTimeout: 5 * time.Second, RecoverAll: true}, od)
	if _, err := orch.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ad.Orchestrator = orch
	s := api.New(ad)
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Listener = s.Listener(srv.Listener) // as phaseflow serve serves: detached streams give connections back
	srv.Start()
	return &stack{srv: srv, api: s, auth: a, orch: orch, stop: func(grace time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		orch.Shutdown(ctx)
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = log.Close(ctx)
		s.EndStreams()
		srv.Close()
		client.CloseIdleConnections()
		_ = up.Close()
		_ = st.Close()
	}}
}

func (s *stack) do(t *testing.T, method, path, body string, headers ...string) *http.Response {
	t.Helper()
	tok, _ := s.auth.Sign("u1", auth.RoleUser, time.Hour)
	req, _ := http.NewRequest(method, s.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestStreamsLeaveNoGoroutines runs turns whose clients read to the end, leave mid-stream,
// and cancel, then shuts the stack down and checks that no goroutine outlived it.
func TestStreamsLeaveNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s := newStack(t)
	defer s.close()

	cases := []struct {
		name string
		text string
		read func(t *testing.T, s *stack, id string, body *bufio.Reader)
	}{
		{"reads to the end", "hello", func(t *testing.T, s *stack, id string, body *bufio.Reader) { _, _ = io.Copy(io.Discard, body) }},
		{"leaves mid-stream", "slow [[pace_ms:20]]", func(t *testing.T, s *stack, id string, body *bufio.Reader) { _, _ = body.ReadString('\n') }},
		{"cancels", "slow [[pace_ms:20]]", func(t *testing.T, s *stack, id string, body *bufio.Reader) {
			_, _ = body.ReadString('\n')
			s.do(t, http.MethodPost, "/api/v1/messages/"+id+"/cancel", "").Body.Close()
			_, _ = io.Copy(io.Discard, body)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.do(t, http.MethodPost, "/api/v1/messages", `{"text":"`+tc.text+`"}`)
			var a struct{ MessageID, EventsURL string }
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err := json.Unmarshal(b, &struct {
				MessageID *string `json:"message_id"`
				EventsURL *string `json:"events_url"`
			}{&a.MessageID, &a.EventsURL}); err != nil || resp.StatusCode != http.StatusAccepted {
				t.Fatalf("post: %d %s", resp.StatusCode, b)
			}
			ev := s.do(t, http.MethodGet, a.EventsURL, "")
			tc.read(t, s, a.MessageID, bufio.NewReader(ev.Body))
			ev.Body.Close()
		})
	}
}
