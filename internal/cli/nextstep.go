package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/spec"
)

// What to run next when a setting the dev environment provides is missing: a newcomer who
// started `slipway dev up` without eval has the cluster but not its environment.
const (
	runDevEnv = `run: eval "$(slipway dev env)"`
	runDevUp  = `eval "$(slipway dev up)"`
)

// devProbeTimeout bounds the health check of a dev environment on an error path.
const devProbeTimeout = 5 * time.Second

// runningDevEnv is the dev environment running in SLIPWAY_DEV_DIR or the default directory
// (the one `slipway dev env` prints), nil when none runs there.
func runningDevEnv(ctx context.Context) *devcluster.Env {
	dir, err := devcluster.DefaultDir()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, devProbeTimeout)
	defer cancel()
	env, err := devcluster.Load(ctx, dir)
	if err != nil {
		return nil
	}
	return env
}

// openKube connects to the cluster of the kubeconfig; when none of its files exists, the
// error says how to get one.
func openKube(ctx context.Context, g *Globals) (*kube.Client, error) {
	c, err := kube.Open(g.KubeconfigSource(), g.Context)
	var none *kube.NoKubeconfigError
	if !errors.As(err, &none) {
		return c, err
	}
	if env := runningDevEnv(ctx); env != nil {
		return nil, fmt.Errorf("%w; a dev environment runs in %s: %s", err, env.Dir, runDevEnv)
	}
	return nil, fmt.Errorf("%w; set KUBECONFIG to your cluster's kubeconfig, or start the dev environment: %s", err, runDevUp)
}

// noRegistry is the error for a verb that needs a registry and has none: it names
// K8S_REGISTRY and the dev environment's registry, or how to start one.
func noRegistry(ctx context.Context) error {
	if env := runningDevEnv(ctx); env != nil {
		return fmt.Errorf("%w; the dev environment's is %s: %s", image.ErrNoRegistry, env.Registry, runDevEnv)
	}
	return fmt.Errorf("%w, or start the dev environment: %s", image.ErrNoRegistry, runDevUp)
}

// devPublishing refuses a group with publish: aimed at a dev environment started without its
// publishing parts (MetalLB, Envoy Gateway; dev up builds and starts them only with --publish),
// and says how to start them: plan would otherwise name a Gateway that does not exist, or
// apply wait for load-balancer addresses that nothing hands out.
func devPublishing(ctx context.Context, g *Globals, grp *spec.Group) error {
	if grp.Publish == nil {
		return nil
	}
	dir, err := devcluster.DefaultDir()
	if err != nil || !inDir(g.KubeconfigSource(), dir) {
		return nil // not the dev environment's cluster: plan checks the Gateway itself
	}
	env := runningDevEnv(ctx)
	if env == nil || env.Gateway != "" {
		return nil
	}
	return fmt.Errorf("group %s publishes names (publish:), and the dev environment in %s runs without its publishing parts (MetalLB, Envoy Gateway; built the first time, about 10 minutes on 2 cores): %s",
		grp.Name, env.Dir, `run: eval "$(slipway dev up --publish)"`)
}

// inDir reports whether the kubeconfig k (its file, or the first of its list) is under dir.
func inDir(k kube.Kubeconfig, dir string) bool {
	f := k.Explicit
	if f == "" && len(k.Precedence) > 0 {
		f = k.Precedence[0]
	}
	abs, err := filepath.Abs(f)
	return err == nil && strings.HasPrefix(abs, filepath.Clean(dir)+string(filepath.Separator))
}
