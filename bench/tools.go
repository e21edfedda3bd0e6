package main

// The tools measured: slipway's, kubectl's and Helm's steps, and building Helm.

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

func (b *bench) runSlipway(ctx context.Context) {
	args := func(verb ...string) []string {
		if b.parallelism > 0 && (verb[0] == "apply" || verb[0] == "plan") {
			verb = append(verb, "--parallelism", strconv.Itoa(b.parallelism))
		}
		return verb
	}
	first := b.step(ctx, "slipway", firstApplyStep, b.slipway, args("apply", "--yes")...)
	if first.Error == "" {
		b.floor(ctx, "slipway", nsSlipway)
	}
	b.step(ctx, "slipway", "no-op apply", b.slipway, args("apply", "--yes")...)
	b.step(ctx, "slipway", "plan (no changes)", b.slipway, args("plan")...)
	if err := os.WriteFile(filepath.Join(b.work, "nodes", nodeName(0), "rootfs", "etc", "bench"), []byte("changed "+randHex()+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	b.step(ctx, "slipway", "one node changed: apply", b.slipway, args("apply", "--yes")...)
	b.step(ctx, "slipway", "destroy", b.slipway, "destroy", "--yes")
}

func (b *bench) runKubectl(ctx context.Context) {
	kubectl := b.env.Kubectl()
	file := filepath.Join(b.work, "kubectl.yaml")
	apply := b.step(ctx, "kubectl", "apply --server-side", kubectl, "apply", "--server-side", "-f", file)
	wait := b.step(ctx, "kubectl", "wait --for=condition=Available", kubectl, "wait", "-n", nsKubectl,
		"--for=condition=Available", "deployment", "--all", "--timeout="+b.waitLimit.String())
	if apply.Error == "" && wait.Error == "" {
		b.floor(ctx, "kubectl", nsKubectl)
	}
	b.step(ctx, "kubectl", "no-op apply --server-side", kubectl, "apply", "--server-side", "-f", file)
	b.step(ctx, "kubectl", "diff --server-side", kubectl, "diff", "--server-side", "-f", file)
	b.step(ctx, "kubectl", "delete namespace (wait)", kubectl, "delete", "namespace", nsKubectl, "--wait=true", "--timeout="+b.waitLimit.String())
}

func (b *bench) runHelm(ctx context.Context) {
	chart := filepath.Join(b.work, "chart")
	limit := "--timeout=" + b.waitLimit.String()
	b.step(ctx, "helm", "install --wait", b.helm, "install", "bench", chart, "-n", nsHelm, "--create-namespace", "--wait", limit)
	b.step(ctx, "helm", "no-op upgrade --wait", b.helm, "upgrade", "bench", chart, "-n", nsHelm, "--wait", limit)
	b.step(ctx, "helm", "uninstall --wait", b.helm, "uninstall", "bench", "-n", nsHelm, "--wait", limit)
	if err := b.kc.DeleteNamespaceAndWait(ctx, nsHelm, ""); err != nil {
		log.Printf("delete namespace %s: %v", nsHelm, err)
	}
}

// buildHelm installs Helm v4 at the pinned version into dir once: with go install, or, when
// that refuses (replace directives), in a small module of its own that requires it.
func buildHelm(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "helm")
	if fi, err := os.Stat(bin); err == nil && !fi.IsDir() {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	log.Printf("building %s into %s (once)", helmModule, dir)
	cmd := exec.CommandContext(ctx, "go", "install", helmModule)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	if err == nil {
		return bin, nil
	}
	if !strings.Contains(string(out), "replace directive") {
		return "", fmt.Errorf("go install %s: %v\n%s", helmModule, err, tail(string(out), 20))
	}
	mod := filepath.Join(dir, "..", "helm-module")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return "", err
	}
	path, version, _ := strings.Cut(helmModule, "@")
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module slipway.dev/bench/helm\n\ngo 1.26.0\n\nrequire helm.sh/helm/v4 "+version+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(mod, "tools.go"), []byte("//go:build tools\n\npackage tools\n\nimport _ \""+path+"\"\n"), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", bin, path}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = mod
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), mod, err, tail(string(out), 20))
		}
	}
	return bin, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
