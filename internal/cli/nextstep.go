package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/kube"
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
