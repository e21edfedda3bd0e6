// Command slipway deploys a group of machine-like nodes to Kubernetes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"slipway.dev/slipway/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := cli.NewRoot()
	root.SetArgs(cli.NormalizeArgs(os.Args[1:]))
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "error:", msg)
		}
	}
	os.Exit(cli.ExitCode(err))
}
