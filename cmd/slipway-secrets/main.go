// Command slipway-secrets is slipway's secrets sidecar (FR-004e), the one file of the image
// slipway pushes to <registry>/<ns>/<node>-<role>/secrets. `slipway-secrets run` writes the
// secrets to files and keeps them current; `slipway-secrets check`, its startup probe, exits 0
// once every file exists. Both read their configuration from SLIPWAY_SECRETS_CONFIG.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"slipway.dev/slipway/internal/secretsconf"
	"slipway.dev/slipway/internal/sidecar"
)

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	if len(args) != 2 || (args[1] != "run" && args[1] != "check") {
		fmt.Fprintln(os.Stderr, "usage: slipway-secrets run|check (configuration in "+secretsconf.Env+")")
		return 2
	}
	cfg, err := secretsconf.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "slipway-secrets:", err)
		return 2
	}
	if args[1] == "check" {
		if missing := sidecar.Check(cfg); len(missing) > 0 {
			fmt.Fprintln(os.Stderr, "slipway-secrets: not written yet:", strings.Join(missing, ", "))
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s := &sidecar.Sidecar{Cfg: cfg, Log: os.Stderr}
	if err := s.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "slipway-secrets:", err)
		return 1
	}
	return 0
}
