package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/phaseflow/phaseflow/mcpcontext"
)

// idp is an identity provider on loopback whose JWK Set, and whether it answers at all,
// a test changes as it goes.
type idp struct {
	mu    sync.Mutex
	state string // "up", "down" (503) or "hang" (answers after the client gave up)
	keys  map[string]*rsa.PrivateKey
	hits  int
	url   string
}

func newIDP(t *testing.T, state string, kids ...string) *idp {
	t.Helper()
	p := &idp{state: state, keys: map[string]*rsa.PrivateKey{}}
	for _, kid := range kids {
		p.add(t, kid)
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.hits++
		state := p.state
		var pub []mcpcontext.PublicKey
		for kid, k := range p.keys {
			pub = append(pub, mcpcontext.PublicKey{Key: &k.PublicKey, KID: kid, Alg: "RS256"})
		}
		p.mu.Unlock()
		switch state {
		case "down":
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case "hang":
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		doc, err := mcpcontext.JWKSDocument(pub)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(doc)
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	p.url = srv.URL
	return p
}

func (p *idp) add(t *testing.T, kid string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[kid] = k
}

func (p *idp) set(state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state = state
}

func (p *idp) remove(kid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.keys, kid)
}

func (p *idp) token(t *testing.T, kid string) string {
	p.mu.Lock()
	k := p.keys[kid]
	p.mu.Unlock()
	return signed(t, jwt.SigningMethodRS256, k, kid, claims(nil))
}

func (p *idp) fetches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits
}

// quickTuning keeps the provider's waits short, in the proportions of the defaults.
var quickTuning = providerTuning{fetchTimeout: 300 * time.Millisecond, unknownEvery: 200 * time.Millisecond,
	unknownWait: 500 * time.Millisecond, retryMin: 20 * time.Millisecond, retryMax: 100 * time.Millisecond}

func (p *idp) authority(t *testing.T, refresh time.Duration) *Authority {
	t.Helper()
	keys, err := startProvider(p.url, refresh, slog.New(slog.NewTextHandler(io.Discard, nil)), quickTuning)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(keys.Close)
	return NewWithOptions(Options{Secret: testSecret, ProviderKeys: keys.Keyfunc})
}

// eventually retries verify until it succeeds or the deadline passes.
func eventually(t *testing.T, within time.Duration, verify func() error) error {
	t.Helper()
	var err error
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if err = verify(); err == nil {
			return nil
		}
	}
	return err
}

func TestProviderDownAtStartIsTrustedOnceItIsBack(t *testing.T) {
	p := newIDP(t, "down", "k1")
	a := p.authority(t, time.Hour)
	tok := p.token(t, "k1")
	if _, err := a.Verify(tok); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("a token verified while the provider was down: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	p.set("up")
	// The backoff retries on its own: no token has to come, and no hour has to pass.
	if err := eventually(t, 2*time.Second, func() error { _, err := a.Verify(tok); return err }); err != nil {
		t.Fatalf("the provider came back but its key is still not trusted: %v", err)
	}
}

func TestAHangingProviderDoesNotHoldRequests(t *testing.T) {
	p := newIDP(t, "hang", "k1")
	a := p.authority(t, time.Hour)
	tok := p.token(t, "k1")
	for range 3 {
		start := time.Now()
		if _, err := a.Verify(tok); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("verified against a hanging provider: %v", err)
		}
		if took := time.Since(start); took > 2*quickTuning.unknownWait+quickTuning.fetchTimeout {
			t.Fatalf("a request waited %v on a hanging provider", took)
		}
	}
	p.set("up")
	if err := eventually(t, 2*time.Second, func() error { _, err := a.Verify(tok); return err }); err != nil {
		t.Fatalf("the provider answers again but its key is not trusted: %v", err)
	}
}

func TestRotatedAndRemovedKeys(t *testing.T) {
	p := newIDP(t, "up", "k1")
	a := p.authority(t, 300*time.Millisecond)
	if err := eventually(t, 2*time.Second, func() error { _, err := a.Verify(p.token(t, "k1")); return err }); err != nil {
		t.Fatal(err)
	}
	// A made-up kid asks for a fetch; a key rotated in just after it is still trusted at
	// its first use or within the few seconds of the rate limit.
	before := p.fetches()
	for range 20 {
		if _, err := a.Verify(signed(t, jwt.SigningMethodRS256, p.keys["k1"], "made-up", claims(nil))); err == nil {
			t.Fatal("a made-up kid verified")
		}
	}
	if n := p.fetches() - before; n > 2 {
		t.Fatalf("20 tokens with a made-up kid made %d fetches, want at most 2", n)
	}
	p.add(t, "k2")
	if err := eventually(t, 2*time.Second, func() error { _, err := a.Verify(p.token(t, "k2")); return err }); err != nil {
		t.Fatalf("a key rotated in is not trusted: %v", err)
	}
	// A key removed at the provider stops being trusted at the next refresh.
	old := p.token(t, "k1")
	p.remove("k1")
	if err := eventually(t, 2*time.Second, func() error {
		if _, err := a.Verify(old); err == nil {
			return errors.New("still trusted")
		}
		return nil
	}); err != nil {
		t.Fatalf("a key removed at the provider is %v", err)
	}
}
