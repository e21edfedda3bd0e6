// Command gen builds the secrets sidecar's programs into internal/secretsbin/bin for slipway
// to embed (`go generate ./internal/secretsbin`, before a release's build), with the same
// flags as the on-demand build and the key of the source they came from.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"slipway.dev/slipway/internal/secretsbin"
)

func main() {
	// go generate runs in the package's directory: internal/secretsbin of the module.
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err == nil {
		err = secretsbin.Generate(context.Background(), src, "bin")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "secretsbin/gen:", err)
		os.Exit(1)
	}
}
