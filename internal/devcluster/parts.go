package devcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// part is one part of the dev environment (SPEC §10). dev up walks parts in order (prepare
// before the environment's lock, then ensure), dev down in reverse (stop), dev env in order
// (exports): a new part is a type here and a line in parts, nothing else names it.
type part interface {
	// wanted reports whether dev up with these options runs the part.
	wanted(o Options) bool
	// prepare builds or checks what the part needs before the environment's lock is taken, so
	// that a running environment stays usable by others meanwhile.
	prepare(ctx context.Context, run *upRun) error
	// ensure starts the part: on an environment just started (run.fresh), or what of it is
	// not running (or not this slipway's) on a running one.
	ensure(ctx context.Context, e *Env, run *upRun) error
	// stop stops the part's processes in the environment of dir (binDir: its binaries); it
	// reports whether one ran.
	stop(dir, binDir string) bool
	// exports are the part's lines of Exports, none when it does not run.
	exports(e *Env) string
}

// parts are the dev environment's parts in start order.
var parts = []part{
	clusterPart{},    // etcd, kube-apiserver, the controllers, kwok and the registry (start.go)
	dnsPart{},        // Knot DNS (knot.go)
	realNodePart{},   // the real kubelet node (realnode.go)
	baseImagesPart{}, // the base images in the registry (baseimages.go)
	publishingPart{}, // MetalLB and Envoy Gateway (extras.go, metallb.go, gateway.go)
	spirePart{},      // the SPIRE server, its node's sshd, the agent image (spire.go)
	secretsPart{},    // the secrets server (vault.go)
	centralPart{},    // PostgreSQL for the central services (postgres.go)
	s3Part{},         // the S3 server for the central services (s3.go)
}

// upRun is what one dev up carries from prepare to ensure.
type upRun struct {
	opts       Options
	fresh      bool
	share      HostShare     // the environment's slot (hostshare.go)
	stages     string        // kwok's stages (fresh)
	node       *realNodePlan // the real node, or why there is none
	bases      *baseImages
	spireBin   string
	secretsBin string
	s3Bin      string
}

// prepareParts runs the prepare of every wanted part.
func prepareParts(ctx context.Context, run *upRun) error {
	for _, p := range parts {
		if p.wanted(run.opts) {
			if err := p.prepare(ctx, run); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureParts runs the ensure of every wanted part, in order.
func ensureParts(ctx context.Context, e *Env, run *upRun) error {
	for _, p := range parts {
		if p.wanted(run.opts) {
			if err := p.ensure(ctx, e, run); err != nil {
				return err
			}
		}
	}
	return nil
}

// stopParts stops every part in dir, the last started first; it counts those that ran.
func stopParts(dir, binDir string) int {
	stopped := 0
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i].stop(dir, binDir) {
			stopped++
		}
	}
	return stopped
}

// noPrepare, noStop and noExports are the phases a part has nothing to do in.
type (
	noPrepare struct{}
	noStop    struct{}
	noExports struct{}
)

func (noPrepare) prepare(context.Context, *upRun) error { return nil }
func (noStop) stop(string, string) bool                 { return false }
func (noExports) exports(*Env) string                   { return "" }

// clusterPart is the cluster itself: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok and the registry, which start as one (start.go: the real node's start
// overlaps theirs). On a running cluster it brings kwok's stages, the controllers' flags and
// the registry's configuration up to this slipway's.
type clusterPart struct{ noPrepare }

func (clusterPart) wanted(Options) bool { return true }

func (clusterPart) ensure(ctx context.Context, e *Env, run *upRun) error {
	if run.fresh {
		if err := e.start(ctx, run.stages, run.opts.Progress); err != nil {
			return err
		}
	} else if err := e.readyForRealNode(ctx, run.node, run.opts.Progress); err != nil {
		// Before anything else restarts: a kwok restarted with new flags just before exited
		// while it waited for the API server to answer.
		return err
	}
	if err := e.ensureKwokConfig(ctx, run.opts.Progress); err != nil {
		return err
	}
	if err := e.ensureControllers(run.opts.Progress); err != nil {
		return err
	}
	return e.ensureRegistryConfig(ctx, run.opts.Progress)
}

func (clusterPart) stop(dir, binDir string) bool {
	stopped := false
	for i := len(components) - 1; i >= 0; i-- {
		pidFile := filepath.Join(dir, "pids", components[i])
		pid, err := readPID(pidFile)
		if err != nil {
			continue
		}
		if alive(pid) && ourProcess(pid, binDir) {
			stopPID(pid, 10*time.Second)
			stopped = true
		}
		_ = os.Remove(pidFile)
	}
	return stopped
}

func (clusterPart) exports(e *Env) string {
	return fmt.Sprintf("export KUBE_CONFIG_PATH=%s KUBECONFIG=%s K8S_REGISTRY=%s PATH=%s:$PATH\n",
		e.Kubeconfig, e.Kubeconfig, e.Registry, e.BinDir)
}

// dnsPart is Knot DNS (knot.go), recorded in cluster.json when started.
type dnsPart struct{ noPrepare }

func (dnsPart) wanted(Options) bool { return true }

func (dnsPart) ensure(ctx context.Context, e *Env, run *upRun) error {
	changed, err := e.ensureDNS(ctx, run.opts.Progress)
	if err != nil || !changed {
		return err
	}
	return e.save()
}

func (dnsPart) stop(dir, _ string) bool { return stopDNS(dir) }
func (dnsPart) exports(e *Env) string   { return e.dnsExports() }

// realNodePart is the real kubelet node (realnode.go). dev up --no-real-node wants it too: it
// records why there is none. A cluster being started starts it beside its own start.
type realNodePart struct{}

func (realNodePart) wanted(Options) bool { return true }

func (realNodePart) prepare(ctx context.Context, run *upRun) error {
	run.node = &realNodePlan{why: "not asked for (dev up --no-real-node)"}
	if !run.opts.NoRealNode {
		run.node = prepareRealNode(ctx, run.opts.Dir, run.share, run.opts.Progress)
	}
	return nil
}

func (realNodePart) ensure(ctx context.Context, e *Env, run *upRun) error {
	if run.fresh {
		return nil // started with the cluster
	}
	return e.ensureRealNode(ctx, run.node, run.opts.Progress)
}

func (realNodePart) stop(dir, binDir string) bool {
	return stopRealNode(dir, filepath.Join(binDir, "kubectl"), filepath.Join(dir, "kubeconfig"), io.Discard)
}

func (realNodePart) exports(e *Env) string { return e.realNodeExports() }

// baseImagesPart pushes the base images (baseimages.go), made beside the rest of dev up, into
// the registry.
type baseImagesPart struct {
	noPrepare
	noStop
	noExports
}

func (baseImagesPart) wanted(Options) bool { return true }

func (baseImagesPart) ensure(ctx context.Context, e *Env, run *upRun) error {
	return e.pushBaseImages(ctx, run.bases)
}

// publishingPart is MetalLB and Envoy Gateway (extras.go), unless dev up --core.
type publishingPart struct{}

func (publishingPart) wanted(o Options) bool { return !o.Core }

func (publishingPart) prepare(ctx context.Context, run *upRun) error {
	return buildExtras(ctx, run.opts.Progress)
}

func (publishingPart) ensure(ctx context.Context, e *Env, run *upRun) error {
	return e.ensurePublishing(ctx, run.fresh, run.opts.Progress)
}

func (publishingPart) stop(dir, _ string) bool {
	stopped := false
	for i := len(extras) - 1; i >= 0; i-- {
		pidFile := filepath.Join(dir, "pids", extras[i])
		if pid, err := readPID(pidFile); err == nil && alive(pid) && runsBinary(pid, extras[i]) {
			stopPID(pid, 10*time.Second)
			stopped = true
		}
		_ = os.Remove(pidFile)
	}
	return stopped
}

func (publishingPart) exports(e *Env) string { return e.gatewayExports() }

// spirePart is the SPIRE server, its node's sshd and the agent image (spire.go).
type spirePart struct{}

func (spirePart) wanted(o Options) bool { return o.Spire }

func (spirePart) prepare(ctx context.Context, run *upRun) (err error) {
	run.spireBin, err = buildSpire(ctx, run.opts.Progress)
	return err
}

func (spirePart) ensure(ctx context.Context, e *Env, run *upRun) error {
	return e.ensureSpire(ctx, run.spireBin, run.opts.Progress)
}

func (spirePart) stop(dir, _ string) bool { return stopSpire(dir) }
func (spirePart) exports(e *Env) string   { return e.spireExports() }

// secretsPart is the secrets server (vault.go).
type secretsPart struct{}

func (secretsPart) wanted(o Options) bool { return o.Secrets }

func (secretsPart) prepare(ctx context.Context, run *upRun) (err error) {
	run.secretsBin, _, err = ensureTool(ctx, vaultTool.module, run.opts.Progress)
	return err
}

func (secretsPart) ensure(ctx context.Context, e *Env, run *upRun) error {
	return e.ensureSecrets(ctx, run.secretsBin, run.opts.Progress)
}

func (secretsPart) stop(dir, _ string) bool { return stopSecrets(dir) }
func (secretsPart) exports(e *Env) string   { return e.secretsExports() }

// centralPart is PostgreSQL and the secrets server's database engine for it (postgres.go).
type centralPart struct{ noPrepare }

func (centralPart) wanted(o Options) bool { return o.Central }

func (centralPart) ensure(ctx context.Context, e *Env, run *upRun) error {
	return e.ensurePostgres(ctx, run.opts.Progress)
}

func (centralPart) stop(dir, _ string) bool { return stopPostgres(dir) }
func (centralPart) exports(e *Env) string   { return e.postgresExports() }
