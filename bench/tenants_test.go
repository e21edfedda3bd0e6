package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTenantsDeps: 100 deployments are 25 files of four (two apps, two ids), each in the
// namespace FR-021 gives it, none shared between them or with the peer's.
func TestTenantsDeps(t *testing.T) {
	deps := tenantsSpec{deployments: 100, nodes: 4, runs: 10}.deps()
	if len(deps) != 100 {
		t.Fatalf("%d deployments, want 100", len(deps))
	}
	seen := map[string]bool{}
	for _, d := range deps {
		if want := d.dir + "-" + d.app + "-" + d.id; d.ns != want {
			t.Errorf("namespace %s, want %s", d.ns, want)
		}
		for _, ns := range []string{d.ns, d.peerNS} {
			if seen[ns] {
				t.Errorf("namespace %s twice", ns)
			}
			seen[ns] = true
		}
	}
	want := tenantDep{dir: "bt-24", app: "y", id: "b", ns: "bt-24-y-b", peerNS: "btk-24-y-b", peerDir: "btk-24-y"}
	if d := cmp.Diff(want, deps[99], cmp.AllowUnexported(tenantDep{})); d != "" {
		t.Errorf("last deployment (-want +got):\n%s", d)
	}
}

// TestWriteAppsGroup: K nodes of each app, each with its own rootfs.
func TestWriteAppsGroup(t *testing.T) {
	dir := t.TempDir()
	if err := writeAppsGroup(dir, "bt-00", []string{"x", "y"}, 2, "r1"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "slipway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"xn000", "xn001", "yn000", "yn001"} {
		if !strings.Contains(string(data), "  "+n+":\n    app: "+n[:1]+"\n") {
			t.Errorf("node %s missing from\n%s", n, data)
		}
		if _, err := os.Stat(filepath.Join(dir, "nodes", n, "rootfs", "etc", "bench")); err != nil {
			t.Error(err)
		}
	}
}
