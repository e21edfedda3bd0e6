// Package secretsbin holds the secrets sidecar's programs (cmd/slipway-secrets) that slipway
// puts into the sidecar image (FR-004e), one per platform, embedded in the slipway binary.
//
// They are built by `go generate ./internal/secretsbin` (CGO off, -trimpath, stripped: the
// same source and Go give the same bytes, so the image's digest changes only when the sidecar
// does, and a new sidecar rolls the pods out). A slipway built without them works for every
// group that has no sidecarSecrets, and refuses one that has, saying how to build them.
package secretsbin

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:generate env CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath "-ldflags=-s -w" -o bin/linux-amd64 slipway.dev/slipway/cmd/slipway-secrets
//go:generate env CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath "-ldflags=-s -w" -o bin/linux-arm64 slipway.dev/slipway/cmd/slipway-secrets

// Platforms the sidecar is built for.
var Platforms = []string{"linux/amd64", "linux/arm64"}

//go:embed bin
var bin embed.FS

// ErrMissing says that this slipway was built without the sidecar's programs.
var ErrMissing = fmt.Errorf("this slipway was built without the secrets sidecar: run `go generate ./internal/secretsbin`, then build slipway again")

// Programs returns the sidecar's program per platform ("linux/amd64" → bytes).
func Programs() (map[string][]byte, error) {
	out := make(map[string][]byte, len(Platforms))
	for _, p := range Platforms {
		b, err := fs.ReadFile(bin, "bin/"+fileOf(p))
		if err != nil {
			return nil, ErrMissing
		}
		out[p] = b
	}
	return out, nil
}

// fileOf is the file of platform p under bin/: "linux/amd64" → "linux-amd64".
func fileOf(p string) string {
	b := []byte(p)
	for i, c := range b {
		if c == '/' {
			b[i] = '-'
		}
	}
	return string(b)
}
