package devcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// kubectl runs the cluster's kubectl with the admin kubeconfig and returns its stdout.
func (e *Env) kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.Kubectl(), append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// applyFiles server-side applies manifest files (CRDs out of a module) and waits until the
// CustomResourceDefinitions among them are Established, so objects of their kinds can follow.
func (e *Env) applyFiles(ctx context.Context, what string, files []string) error {
	apply := []string{"apply", "--server-side", "--force-conflicts"}
	wait := []string{"wait", "--for=condition=Established", "--timeout=60s"}
	for _, f := range files {
		apply = append(apply, "-f", f)
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("dev cluster: %s: %w", what, err)
		}
		if strings.Contains(string(b), "kind: CustomResourceDefinition") {
			wait = append(wait, "-f", f)
		}
	}
	if _, err := e.kubectl(ctx, apply...); err != nil {
		return fmt.Errorf("dev cluster: %s: %w", what, err)
	}
	if _, err := e.kubectl(ctx, wait...); err != nil {
		return fmt.Errorf("dev cluster: %s: %w", what, err)
	}
	return nil
}

// yamlFiles lists the *.yaml files of dir, sorted.
func yamlFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no *.yaml files in %s", dir)
	}
	return files, err
}

// waitFor polls cond until it holds or limit passes; cond says what it saw for the error.
func waitFor(ctx context.Context, limit time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, seen := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dev cluster: %s: not after %s (last seen: %s)", what, limit, seen)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
