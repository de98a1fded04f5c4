package auth

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// providerHTTPTimeout bounds one fetch of the identity provider's JWK Set.
const providerHTTPTimeout = 10 * time.Second

// ProviderKeys returns the key lookup for an identity provider's JWK Set at url, for
// [Options.ProviderKeys]. The keys are cached: fetched at once (a failure is logged, not
// fatal, so the server starts while the provider is down), refreshed every hour, and
// refetched when a token names an unknown kid (at most once every 5 minutes, so forged kids
// cannot make the server hammer the provider). The refresh goroutine belongs to the keyfunc
// library and ends when ctx ends. The library checks a JWK's "alg" against the token's when
// the JWK has one, and golang-jwt refuses a key of the wrong type for the algorithm.
func ProviderKeys(ctx context.Context, url string, logger *slog.Logger) (jwt.Keyfunc, error) {
	k, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{url}, keyfunc.Override{
		HTTPTimeout: providerHTTPTimeout,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				logger.Warn("refresh the identity provider's JWK Set", "url", u, "err", err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("auth: identity provider keys: %w", err)
	}
	return k.Keyfunc, nil
}
