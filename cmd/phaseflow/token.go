package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/config"
)

// runToken prints a bearer token for local use and scripts:
//
//	phaseflow token --sub alice [--role admin] [--ttl 24h] [config flags]
//
// It accepts every config flag and PHASEFLOW_* variable of "phaseflow serve" and builds its
// signer with auth.FromConfig, exactly as the server does, so the token is signed with the
// server's secret (PHASEFLOW_JWT_SECRET, else <data-dir>/jwt-secret, created if missing)
// and carries its issuer and audience. Only the token and a newline go to stdout, so
// TOKEN=$(phaseflow token --sub alice) works. Exit status: 0 ok, 1 failure, 2 usage.
func runToken(ctx context.Context, sio stdio, args []string) int {
	_ = ctx
	fs := flag.NewFlagSet("phaseflow token", flag.ContinueOnError)
	sub := fs.String("sub", "", "user id for the token's sub claim (required)")
	role := fs.String("role", auth.RoleUser, "role claim: user or admin")
	ttl := fs.Duration("ttl", 24*time.Hour, "how long the token stays valid")
	cfg, err := config.LoadFlagsFor(fs, args, sio.getenv, "jwt-secret", "data-dir", "jwt-issuer", "jwt-audience", "jwt-max-ttl")
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(sio.out, err)
		return 0
	}
	if err == nil {
		err = checkTokenFlags(*sub, *role, *ttl, cfg.JWTMaxTTL)
	}
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow token: %v\nRun \"phaseflow token -h\" for usage.\n", err)
		return 2
	}
	token, err := signToken(cfg, *sub, *role, *ttl)
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow token: %v\n", err)
		return 1
	}
	fmt.Fprintln(sio.out, token)
	return 0
}

// checkTokenFlags reports a usage error in the token-specific flags; maxTTL is the server's
// PHASEFLOW_JWT_MAX_TTL, beyond which the server would refuse the token.
func checkTokenFlags(sub, role string, ttl, maxTTL time.Duration) error {
	switch {
	case sub == "":
		return errors.New("--sub is required")
	case role != auth.RoleUser && role != auth.RoleAdmin:
		return fmt.Errorf("--role: unknown role %q (want %s or %s)", role, auth.RoleUser, auth.RoleAdmin)
	case ttl <= 0:
		return fmt.Errorf("--ttl: must be positive, got %v", ttl)
	case ttl > maxTTL:
		return fmt.Errorf("--ttl %v is longer than the server accepts (PHASEFLOW_JWT_MAX_TTL / --jwt-max-ttl = %v)", ttl, maxTTL)
	}
	return nil
}

// signToken signs a bearer token with the server's secret, issuer and audience. With an
// identity provider and no explicit secret the server accepts only the provider's tokens,
// so a token signed here would be useless: that is an error.
func signToken(cfg config.Config, sub, role string, ttl time.Duration) (string, error) {
	if cfg.JWTJWKSURL != "" && !cfg.JWTSecret.IsSet() {
		return "", errors.New("the server accepts only the identity provider's tokens (PHASEFLOW_JWT_JWKS_URL is set and PHASEFLOW_JWT_SECRET is not); get a token from the provider")
	}
	a, err := auth.FromConfig(cfg)
	if err != nil {
		return "", err
	}
	return a.Sign(sub, role, ttl)
}
