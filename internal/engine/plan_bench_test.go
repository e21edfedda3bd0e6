package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// benchGroup loads a group shaped as the bench's (bench/setup.go writeGroup): n nodes, each a
// tiny rootfs of its own and port 80 served and published.
func benchGroup(b *testing.B, n int) *spec.Group {
	b.Helper()
	dir := b.TempDir()
	var y strings.Builder
	fmt.Fprintf(&y, "group: scale\nnamespace: scale\ndefaults:\n  state: {size: 1Gi}\nnodes:\n")
	for i := range n {
		name := fmt.Sprintf("n%03d", i)
		root := filepath.Join(dir, "nodes", name, "rootfs", "etc")
		if err := os.MkdirAll(root, 0o755); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&y, "  %s:\n    image: {rootfs: nodes/%s/rootfs}\n    firewall: {served: [80], published: [80]}\n", name, name)
	}
	path := filepath.Join(dir, "slipway.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	g, err := spec.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkDesiredObjects1000 is the share of a 1,000-node plan that renders the objects and
// converts them for the comparison with the live ones.
func BenchmarkDesiredObjects1000(b *testing.B) {
	g := benchGroup(b, 1000)
	t := Target{Group: g, Namespace: "scale"}
	var images []plan.Image
	ids := map[string]string{}
	for _, n := range g.Nodes {
		images = append(images, plan.Image{Name: n.Name, Node: n.Name, Digest: "r/" + n.Name + "@sha256:" + strings.Repeat("a", 64)})
		ids[n.Name] = strings.Repeat("b", 32)
	}
	b.ReportAllocs()
	for b.Loop() {
		objs, err := desiredObjects(t, images, ids, nil, features{}, false)
		if err != nil {
			b.Fatal(err)
		}
		if len(objs) < 5000 {
			b.Fatalf("%d objects", len(objs))
		}
	}
}
