package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/store"
)

// runMigrate applies the embedded migrations to the configured database and exits. The
// server does the same at start; this is for deployments that migrate as a separate step.
func runMigrate(ctx context.Context, sio stdio, args []string) int {
	cfg, err := config.LoadFlagsFor(flag.NewFlagSet("phaseflow migrate", flag.ContinueOnError), args, sio.getenv,
		"database-url", "data-dir")
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(sio.out, err)
		return 0
	}
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow migrate: %v\n", err)
		return 2
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow migrate: %v\n", err)
		return 1
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow migrate: %v\n", err)
		return 1
	}
	if len(applied) == 0 {
		fmt.Fprintf(sio.out, "%s database is up to date\n", st.Driver())
		return 0
	}
	fmt.Fprintf(sio.out, "%s database: applied %s\n", st.Driver(), strings.Join(applied, ", "))
	return 0
}
