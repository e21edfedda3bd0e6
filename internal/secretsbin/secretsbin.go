// Package secretsbin holds the secrets sidecar's programs (cmd/slipway-secrets) that slipway
// puts into the sidecar image (FR-004e), one per platform.
//
// A release embeds them: `go generate ./internal/secretsbin` builds them into bin/ before
// slipway is built. A slipway built without them (`go run ./cmd/slipway`, `go install`, a
// fresh clone) builds them on demand from its own module source, which its binary names, with
// the Go toolchain that built it, once per source content, cached under the user's cache
// directory (build.go). Both ways use the same flags (CGO off, -trimpath, no VCS stamp,
// stripped, fixed GOAMD64/GOARM64), so the same source and Go give the same bytes, the image's
// digest changes only when the sidecar does, and a new sidecar rolls the pods out.
package secretsbin

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
)

//go:generate go run ./gen

// Platforms the sidecar is built for: the kube nodes' architectures (the image is an index).
var Platforms = []string{"linux/amd64", "linux/arm64"}

//go:embed bin
var bin embed.FS

// keyFile is the file of bin/ that holds the source key the embedded programs were built from.
const keyFile = "key"

var (
	once  sync.Once
	progs map[string][]byte
	err   error
)

// Programs returns the sidecar's program per platform ("linux/amd64" → bytes): the embedded
// ones, unless this binary's module source is on this machine and differs from what they were
// built from (a stale `go generate`); else the ones built on demand from that source. A build
// says what it does on progress. The answer is kept for the process.
func Programs(ctx context.Context, progress io.Writer) (map[string][]byte, error) {
	once.Do(func() { progs, err = programs(ctx, progress) })
	return progs, err
}

func programs(ctx context.Context, progress io.Writer) (map[string][]byte, error) {
	if progress == nil {
		progress = io.Discard
	}
	emb, embKey := embedded()
	src, srcErr := sourceDir()
	if srcErr != nil {
		if emb != nil {
			return emb, nil // a release: no source, the programs it was built with
		}
		return nil, fmt.Errorf("secrets sidecar: this slipway has none built in and cannot build one: %w", srcErr)
	}
	b, err := newBuilder(ctx, src)
	if err != nil {
		if emb != nil {
			return emb, nil
		}
		return nil, fmt.Errorf("secrets sidecar: this slipway has none built in and cannot build one: %w", err)
	}
	if emb != nil && embKey == b.key {
		return emb, nil
	}
	if emb != nil {
		fmt.Fprintf(progress, "slipway: the secrets sidecar built into this slipway is older than its source in %s: using one built from the source\n", src)
	}
	return b.programs(ctx, progress)
}

// embedded returns the programs of bin/ and the key they were built from; nil when bin/ lacks
// one of them.
func embedded() (map[string][]byte, string) {
	out := make(map[string][]byte, len(Platforms))
	for _, p := range Platforms {
		b, err := fs.ReadFile(bin, "bin/"+fileOf(p))
		if err != nil {
			return nil, ""
		}
		out[p] = b
	}
	key, _ := fs.ReadFile(bin, "bin/"+keyFile)
	return out, strings.TrimSpace(string(key))
}

// fileOf is the file of platform p under bin/: "linux/amd64" → "linux-amd64".
func fileOf(p string) string { return strings.ReplaceAll(p, "/", "-") }
