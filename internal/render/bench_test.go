package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// writeBigGroup writes a group file of n nodes, each with a firewall of every class and a
// worker role, and returns its path.
func writeBigGroup(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "rootfs", "etc"), 0o755); err != nil {
		b.Fatal(err)
	}
	var s strings.Builder
	s.WriteString("group: big\nruntimeClassName: systemd\ndefaults:\n  state: {size: 1Gi, storageClass: standard}\n  env: {TZ: UTC}\n  image: {rootfs: rootfs}\nnodes:\n")
	for i := range n {
		fmt.Fprintf(&s, `  node-%04d:
    resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 1Gi}}
    env: {INDEX: "%d"}
    firewall:
      served: [22, 80, 443, udp/53, 9100]
      published: [80, 443, udp/53]
      admin: [22]
      operator: [9100]
      internalSources: [10.10.0.0/16]
      adminSources: [192.0.2.0/24]
      operatorSources: [198.51.100.7/32]
    publishedNames: [n%d.example.org]
    roles:
      worker: {replicas: 2, ports: [8080], metrics: 9101}
`, i, i, i)
	}
	path := filepath.Join(dir, "slipway.yaml")
	if err := os.WriteFile(path, []byte(s.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkLoadValidateRender1000 is the budget: load, validate and render a group of
// 1,000 nodes in under 200 ms.
func BenchmarkLoadValidateRender1000(b *testing.B) {
	path := writeBigGroup(b, 1000)
	g, err := spec.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	in := fakeInput(g) // digests and IDs come from elsewhere; their making is not measured
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		g, err := spec.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		in.Group = g
		objs, err := render.Objects(in)
		if err != nil {
			b.Fatal(err)
		}
		if len(objs) != 2+1000*10 {
			b.Fatalf("%d objects", len(objs))
		}
	}
}

// BenchmarkYAML1000 measures writing the objects of 1,000 nodes as a YAML stream.
func BenchmarkYAML1000(b *testing.B) {
	g, err := spec.Load(writeBigGroup(b, 1000))
	if err != nil {
		b.Fatal(err)
	}
	objs, err := render.Objects(fakeInput(g))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := render.YAML(objs); err != nil {
			b.Fatal(err)
		}
	}
}
