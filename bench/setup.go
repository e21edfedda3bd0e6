package main

// Setup: the dev cluster, the work directory, the slipway binary, the proxy every tool talks
// through, the group of N nodes and the peers' objects.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"slipway.dev/slipway/internal/devcluster"
	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

func (b *bench) setup(ctx context.Context, cache string, skipKubectl, skipHelm bool) error {
	// The waves mode publishes nothing: it needs no publishing parts, and so does not build them.
	env, running, err := devcluster.Up(ctx, devcluster.Options{Progress: os.Stderr, Dir: b.devDir, Core: b.devDir != "" || b.waves != nil || b.tenants != nil})
	if err != nil {
		return err
	}
	log.Printf("dev cluster %s (reused: %v), registry %s", env.Server, running, env.Registry)
	b.env = env
	if b.kc, err = kube.New(env.Kubeconfig, ""); err != nil {
		return err
	}
	if b.real {
		if err := requireRealNode(ctx, b.kc); err != nil {
			return err
		}
	}
	run := randHex()
	b.work = filepath.Join(cache, "run-"+run)
	if err := os.MkdirAll(b.work, 0o755); err != nil {
		return err
	}
	log.Printf("work directory %s", b.work)

	b.slipway = filepath.Join(b.work, "slipway")
	t0 := time.Now()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", b.slipway, "slipway.dev/slipway/cmd/slipway").CombinedOutput(); err != nil {
		return fmt.Errorf("build slipway: %v\n%s", err, out)
	}
	log.Printf("built slipway in %.1fs", time.Since(t0).Seconds())
	if !skipHelm && !b.scale && b.waves == nil && b.tenants == nil {
		if b.helm, err = buildHelm(ctx, filepath.Join(cache, "bin")); err != nil {
			b.note(fmt.Sprintf("Helm left out: %v", err))
			log.Printf("Helm left out: %v", err)
			b.helm = ""
		}
	}

	if b.proxy, err = devtest.APIProxy(env); err != nil {
		return err
	}
	b.kubeconfig = filepath.Join(b.work, "kubeconfig")
	if err := b.proxy.WriteKubeconfig(b.kubeconfig); err != nil {
		return err
	}
	b.toolEnv = append(os.Environ(),
		"KUBECONFIG="+b.kubeconfig, "KUBE_CONFIG_PATH="+b.kubeconfig, "K8S_REGISTRY="+env.Registry,
		"KUBECACHEDIR="+filepath.Join(b.work, "kubecache"), "HELM_CACHE_HOME="+filepath.Join(b.work, "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(b.work, "helm-config"), "HELM_DATA_HOME="+filepath.Join(b.work, "helm-data"))
	for _, k := range []string{"K8S_NAMESPACE", "SLIPWAY_STATE"} {
		b.toolEnv = slices.DeleteFunc(b.toolEnv, func(s string) bool { return strings.HasPrefix(s, k+"=") })
	}

	// Leftovers of a killed run of this mode go first; another mode's namespaces may be in use
	// by a run of that mode beside this one.
	for _, ns := range b.namespaces() {
		if err := b.kc.DeleteNamespaceAndWait(ctx, ns, ""); err != nil {
			return err
		}
	}
	b.run = run
	if b.scale || b.waves != nil || b.tenants != nil {
		return nil // each size writes its own group; the waves mode writes its own
	}
	return b.writeInputs(ctx, skipKubectl)
}

// writeInputs writes the group of b.run and the peers' objects of it (their images pushed).
func (b *bench) writeInputs(ctx context.Context, skipKubectl bool) error {
	run := b.run
	write := writeGroup
	if b.real {
		write = writeRealGroup
	}
	if err := write(b.work, b.n, run, group, nsSlipway); err != nil {
		return err
	}
	log.Printf("group of %d nodes written", b.n)

	// The peers' objects: what slipway renders, in their own namespaces, their images pushed.
	if !skipKubectl {
		if err := b.prepare(ctx, nsKubectl, filepath.Join(b.work, "kubectl.yaml"), true); err != nil {
			return err
		}
	}
	if b.helm != "" {
		chart := filepath.Join(b.work, "chart")
		if err := os.MkdirAll(filepath.Join(chart, "templates"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: bench\nversion: 0.1.0\n"), 0o644); err != nil {
			return err
		}
		// The namespace comes from install --create-namespace, as Helm users do.
		if err := b.prepare(ctx, nsHelm, filepath.Join(chart, "templates", "objects.yaml"), false); err != nil {
			return err
		}
	}
	return nil
}

// prepare renders the group into ns (pushing its images there) and writes the YAML to path,
// with or without the Namespace object.
func (b *bench) prepare(ctx context.Context, ns, path string, withNamespace bool) error {
	return b.renderTo(ctx, b.work, ns, path, withNamespace)
}

// renderTo is prepare of the group file in dir.
func (b *bench) renderTo(ctx context.Context, dir, ns, path string, withNamespace bool) error {
	cmd := exec.CommandContext(ctx, b.slipway, "render", "--push", "-n", ns)
	cmd.Dir = dir
	cmd.Env = b.toolEnv
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("slipway render -n %s: %v\n%s", ns, err, tail(stderr.String(), 20))
	}
	var keep []string
	for _, d := range strings.Split(string(out), "\n---\n") {
		if strings.TrimSpace(d) == "" || !withNamespace && isNamespace(d) {
			continue
		}
		keep = append(keep, d)
	}
	return os.WriteFile(path, []byte(strings.Join(keep, "\n---\n")+"\n"), 0o644)
}

// isNamespace reports whether a YAML document is a Namespace object.
func isNamespace(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l == "kind: Namespace" {
			return true
		}
	}
	return false
}

// writeGroup writes slipway.yaml and a tiny rootfs per node into dir; run makes every image
// new to the registry, so the first apply pushes them all.
func writeGroup(dir string, n int, run, grp, ns string) error {
	var y strings.Builder
	fmt.Fprintf(&y, "group: %s\nnamespace: %s\ndefaults:\n  state: {size: 1Gi}\nnodes:\n", grp, ns)
	for i := range n {
		name := nodeName(i)
		root := filepath.Join(dir, "nodes", name, "rootfs")
		if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, "etc", "bench"), []byte(fmt.Sprintf("node %s run %s\n", name, run)), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, "etc", "hostname"), []byte(name+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&y, "  %s:\n    image: {rootfs: nodes/%s/rootfs}\n    firewall: {served: [80], published: [80]}\n", name, name)
	}
	return os.WriteFile(filepath.Join(dir, "slipway.yaml"), []byte(y.String()), 0o644)
}

func nodeName(i int) string { return fmt.Sprintf("n%03d", i) }

func machine() Machine {
	m := Machine{NProc: runtime.NumCPU(), Go: runtime.Version()}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.MemoryGiB = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load = strings.Join(strings.Fields(string(data))[:3], " ")
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.Go = strings.TrimSpace(strings.TrimPrefix(string(out), "go version "))
	}
	return m
}

func randHex() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// namespaces are the namespaces this mode's runs use.
func (b *bench) namespaces() []string {
	switch {
	case b.waves != nil:
		return b.waves.namespaces()
	case b.tenants != nil:
		return b.tenants.namespaces()
	case b.publish:
		return []string{nsPlain, nsPublish}
	case b.scale:
		return []string{nsScale}
	}
	return []string{nsSlipway, nsKubectl, nsHelm}
}
