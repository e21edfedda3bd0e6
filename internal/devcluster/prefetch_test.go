package devcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A cold dev up lists, in the background and in build order, the packages of every tool after
// the first (which downloads their modules into the module cache), each in a module directory
// of its own with the tool's pins; a tool already built is left out.
func TestPrefetch(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	record := filepath.Join(t.TempDir(), "calls")
	goBin := filepath.Join(t.TempDir(), "go")
	script := "#!/bin/sh\necho \"$PWD $GOFLAGS $*\" >> " + record + "\n"
	if err := os.WriteFile(goBin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// etcd is built already.
	etcd, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(etcd, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etcd, "bin", "etcd"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	ts := toolsToBuild(Options{Core: true, NoRealNode: true})
	var names []string
	for _, tl := range ts {
		names = append(names, tl.module)
	}
	if diff := cmp.Diff([]string{"kube", "kwok", "registry"}, names); diff != "" {
		t.Fatalf("tools to build (-want +got):\n%s", diff)
	}
	<-prefetch(context.Background(), goBin, ts)
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(cache, "slipway", "dev", "prefetch")
	want := []string{
		filepath.Join(base, "kwok") + " -mod=mod list -deps sigs.k8s.io/kwok/cmd/kwok",
		filepath.Join(base, "registry") + " -mod=mod list -deps ./" + registryBin,
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(string(b)), "\n")); diff != "" {
		t.Errorf("go commands run (-want +got):\n%s", diff)
	}
	for _, f := range []string{"kwok/go.mod", "kwok/go.sum", "registry/go.mod", "registry/" + registryBin + "/main.go"} {
		if _, err := os.Stat(filepath.Join(base, f)); err != nil {
			t.Errorf("prefetch module: %v", err)
		}
	}
}

// With the publishing parts and the real node, the order is dev up's: MetalLB and Envoy
// Gateway, the real node's parts, then the cluster's.
func TestToolsToBuildOrder(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var got []string
	for _, tl := range toolsToBuild(Options{}) {
		got = append(got, tl.module)
	}
	want := []string{"metallb", "envoy-gateway"}
	for _, tl := range nodeTools {
		want = append(want, tl.module)
	}
	want = append(want, "kube", "etcd", "kwok", "registry")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// --secrets builds the secrets server after the publishing parts, before the node's.
	got = nil
	for _, tl := range toolsToBuild(Options{Secrets: true}) {
		got = append(got, tl.module)
	}
	want = append(append([]string{"metallb", "envoy-gateway", "vault"}, want[2:len(want)-4]...), "kube", "etcd", "kwok", "registry")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with --secrets (-want +got):\n%s", diff)
	}
}
