package devcluster

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The secrets server (vault.go) is Vault v1.14.8, the last MPL-2.0 release the Go module proxy
// serves. It does not build as the proxy serves it: its tree expects an sdk between the served
// v0.9.2 and v0.10.x, and no served sdk matches. tools/vault pins vault, api v1.10.0 and a
// replace of the sdk by ./sdk, which the build lays out from the served sdk v0.9.2 with
// tools/vault/sdk-v0.9.2.patch applied (three symbols backported, one start-up panic its
// enterprise stubs trip removed; /work/shared/research/vault-server.md found them).
const (
	VaultVersion      = "v1.14.8"
	vaultModule       = "github.com/hashicorp/vault"
	vaultSDKModule    = "github.com/hashicorp/vault/sdk"
	vaultSDKVersion   = "v0.9.2"
	vaultSDKPatchName = "sdk-v0.9.2.patch"
)

// vaultSDKPatch is tools/vault/sdk-v0.9.2.patch (copied by pins/gen.sh).
//
//go:embed pins/vault-sdk.patch.txt
var vaultSDKPatch []byte

// vaultBin names the binary after the patch: the cache key is the tool's pins, so a changed
// patch builds a new binary beside the old one instead of reusing it.
var vaultBin = func() string {
	h := sha256.Sum256(vaultSDKPatch)
	return "vault-" + hex.EncodeToString(h[:4])
}()

// vaultTool builds the secrets server; only dev up --secrets asks for it (about 13 minutes
// cold on 2 busy cores, 3.6 GB at its peak).
var vaultTool = tool{
	module:  "vault",
	from:    vaultModule + " " + VaultVersion,
	pkgs:    []string{vaultModule},
	bins:    []string{vaultBin},
	ldflags: "-s -w",
	own:     true,
	secrets: true,
	prepare: prepareVaultSDK,
}

// prepareVaultSDK writes src/sdk: the served sdk v0.9.2 (checked against go.sum by the go
// command) with the patch applied. It is rewritten from the module cache on every build, so
// what is built is always the pinned module plus the patch.
func prepareVaultSDK(ctx context.Context, src string) error {
	dir, err := moduleDir(ctx, src, vaultSDKModule+"@"+vaultSDKVersion)
	if err != nil {
		return err
	}
	sdk := filepath.Join(src, "sdk")
	if err := os.RemoveAll(sdk); err != nil {
		return err
	}
	if err := copyTree(dir, sdk); err != nil {
		return fmt.Errorf("copy %s@%s: %w", vaultSDKModule, vaultSDKVersion, err)
	}
	if err := applyPatch(sdk, vaultSDKPatch); err != nil {
		return fmt.Errorf("%s on %s@%s: %w", vaultSDKPatchName, vaultSDKModule, vaultSDKVersion, err)
	}
	return nil
}

// copyTree copies the regular files and directories under src (a read-only module directory)
// to dst, writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return copyFile(f, to, 0o644)
	})
}
