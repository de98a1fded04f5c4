package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/phaseflow/phaseflow/internal/workgroup"
)

// providerTuning are the provider's waits; tests shorten them.
type providerTuning struct {
	// fetchTimeout bounds one fetch of the JWK Set.
	fetchTimeout time.Duration
	// unknownEvery is how often a token naming a key the set lacks may ask for a fetch, so
	// made-up kids cannot make the server hammer the provider; unknownWait is how long
	// such a request waits for that fetch before it is refused.
	unknownEvery, unknownWait time.Duration
	// retryMin and retryMax bound the backoff while fetches fail.
	retryMin, retryMax time.Duration
}

func defaultProviderTuning() providerTuning {
	return providerTuning{fetchTimeout: 10 * time.Second, unknownEvery: 5 * time.Second, unknownWait: 2 * time.Second,
		retryMin: time.Second, retryMax: time.Minute}
}

// Provider is an identity provider's JWK Set, kept fresh for [Options.ProviderKeys]. The
// keyfunc and jwkset libraries read the keys and match them to tokens; the fetching is
// Phaseflow's own, because the libraries' refresh waits an hour after a failed first fetch
// and blocks a request for up to a minute on an unknown kid. Here the set is fetched at
// once and again with backoff until it succeeds (a server starts while the provider is
// down and trusts its keys as soon as it is back), then every refresh interval, so a key
// removed at the provider stops being trusted; a token naming a key the set lacks (a key
// just rotated in) asks for a fetch at most once per few seconds and waits for it briefly.
type Provider struct {
	url     string
	every   time.Duration
	tune    providerTuning
	client  *http.Client
	store   jwkset.Storage
	keys    keyfunc.Keyfunc
	logger  *slog.Logger
	cancel  context.CancelFunc
	group   workgroup.Group
	ask     chan struct{} // a fetch asked for by an unknown kid (one waits at most)
	mu      sync.Mutex
	fetched chan struct{} // closed when the next fetch ends
	asked   time.Time     // when an unknown kid last asked for a fetch
}

// ProviderKeys starts keeping the JWK Set at url, refreshed every refresh (at least a
// minute) until [Provider.Close].
func ProviderKeys(url string, refresh time.Duration, logger *slog.Logger) (*Provider, error) {
	return startProvider(url, refresh, logger, defaultProviderTuning())
}

func startProvider(url string, refresh time.Duration, logger *slog.Logger, tune providerTuning) (*Provider, error) {
	store := jwkset.NewMemoryStorage()
	keys, err := keyfunc.New(keyfunc.Options{Storage: store})
	if err != nil {
		return nil, fmt.Errorf("auth: identity provider keys: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Provider{url: url, every: refresh, tune: tune, client: &http.Client{Timeout: tune.fetchTimeout},
		store: store, keys: keys, logger: logger, cancel: cancel, ask: make(chan struct{}, 1), fetched: make(chan struct{})}
	p.group.Go(func() { p.run(ctx) })
	return p, nil
}

// Close stops the refreshes and waits for them.
func (p *Provider) Close() {
	p.cancel()
	p.group.Close()
	p.group.Wait()
}

// Keyfunc is the key lookup for [Options.ProviderKeys]. The library checks a JWK's "alg"
// against the token's when the JWK has one, and golang-jwt refuses a key of the wrong type
// for the algorithm.
func (p *Provider) Keyfunc(t *jwt.Token) (any, error) {
	key, err := p.keys.Keyfunc(t)
	if err == nil || !errors.Is(err, jwkset.ErrKeyNotFound) {
		return key, err
	}
	if wait, ok := p.askFetch(); ok {
		timer := time.NewTimer(p.tune.unknownWait)
		defer timer.Stop()
		select {
		case <-wait:
			return p.keys.Keyfunc(t)
		case <-timer.C:
		}
	}
	return nil, err
}

// askFetch asks for a fetch on behalf of an unknown kid, unless one asked too recently,
// and returns the channel closed when the next fetch ends.
func (p *Provider) askFetch() (<-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.asked.IsZero() && time.Since(p.asked) < p.tune.unknownEvery {
		return nil, false
	}
	p.asked = time.Now()
	select {
	case p.ask <- struct{}{}:
	default: // one is asked for already
	}
	return p.fetched, true
}

// run fetches the set at once, then with backoff while fetches fail, every refresh
// interval once one succeeded, and whenever an unknown kid asks.
func (p *Provider) run(ctx context.Context) {
	failures, delay := 0, time.Duration(0)
	for {
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-p.ask:
			timer.Stop()
		}
		err := p.fetch(ctx)
		p.mu.Lock()
		close(p.fetched)
		p.fetched = make(chan struct{})
		p.mu.Unlock()
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			failures++
			delay = min(p.tune.retryMin<<min(failures-1, 16), p.tune.retryMax)
			p.logger.Warn("fetch the identity provider's JWK Set", "url", p.url, "failures", failures, "retry_in", delay.String(), "err", err)
		default:
			if failures > 0 {
				p.logger.Info("fetched the identity provider's JWK Set again", "url", p.url, "after_failures", failures)
			}
			failures, delay = 0, p.every
		}
	}
}

// fetch reads the set and replaces the keys with it: a key the provider removed is gone.
// Keys of types the library does not support are left out, as its own refresh does.
func (p *Provider) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.tune.fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return fmt.Errorf("auth: JWK Set request: %w", err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("auth: fetch JWK Set: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("auth: fetch JWK Set: status %d", resp.StatusCode)
	}
	var set jwkset.JWKSMarshal
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&set); err != nil {
		return fmt.Errorf("auth: decode JWK Set: %w", err)
	}
	keys := make([]jwkset.JWK, 0, len(set.Keys))
	for _, m := range set.Keys {
		k, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		switch {
		case errors.Is(err, jwkset.ErrUnsupportedKey):
			continue
		case err != nil:
			return fmt.Errorf("auth: JWK Set key %q: %w", m.KID, err)
		}
		keys = append(keys, k)
	}
	if err := p.store.KeyReplaceAll(ctx, keys); err != nil {
		return fmt.Errorf("auth: keep JWK Set: %w", err)
	}
	return nil
}
