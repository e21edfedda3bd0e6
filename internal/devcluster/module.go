package devcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
)

// moduleDir downloads (or finds in the module cache) the module path at the version the tool
// module in src pins, checked against its go.sum, and returns its directory. Files the dev
// cluster needs from a module (kwok's stages, CRDs) are read from there: nothing is vendored,
// and only the Go module proxy is needed on a fresh machine.
func moduleDir(ctx context.Context, src, path string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("dev cluster: reading module %s needs the Go toolchain on PATH: %w", path, err)
	}
	cmd := exec.CommandContext(ctx, goBin, "mod", "download", "-json", path)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("dev cluster: go mod download %s in %s: %w: %s", path, src, err, stderr)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("dev cluster: go mod download %s: no module directory in %q", path, out)
	}
	return mod.Dir, nil
}
