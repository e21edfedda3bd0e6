// Command slipway deploys a group of machine-like nodes to Kubernetes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"slipway.dev/slipway/internal/cli"
	"slipway.dev/slipway/internal/heap"
	"slipway.dev/slipway/internal/quote"
)

// heapHint is the heap the huge pages are asked for: a no-op plan of 2,000 nodes peaked at
// about 200 MB of heap (issue 17). It costs address space, not memory.
const heapHint = 256 << 20

func main() {
	heap.PreferHugePages(heapHint)
	stopProfiles, perr := startProfiles(os.Getenv)
	if perr != nil {
		fmt.Fprintln(os.Stderr, "warning: profile:", perr)
		stopProfiles = func() error { return nil }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := cli.NewRoot()
	root.SetArgs(cli.NormalizeArgs(os.Args[1:]))
	err := root.ExecuteContext(ctx)
	stop()
	if perr := stopProfiles(); perr != nil {
		fmt.Fprintln(os.Stderr, "warning: profile:", perr)
	}
	if err != nil {
		if msg := errorLine(err); msg != "" {
			fmt.Fprintln(os.Stderr, msg)
		}
	}
	os.Exit(cli.ExitCode(err))
}

// errorLine is what main prints of err, "" for nothing. The cluster's words (an admission
// webhook's message, say) can reach an error: its line breaks are kept, its escape codes are
// quoted (issue 35).
func errorLine(err error) string {
	if msg := err.Error(); msg != "" {
		return "error: " + quote.Text(msg)
	}
	return ""
}
