package spec_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"slipway.dev/slipway/internal/spec"
)

// FuzzLoad feeds arbitrary files to the loader: it must never panic, and must either return a
// group that keeps the package's promises or Errors whose every entry names the file and says
// what is wrong. The seed corpus is testdata/fuzz/FuzzLoad plus the examples.
func FuzzLoad(f *testing.F) {
	for _, p := range []string{"../../examples/hello/slipway.yaml", "../../examples/full/slipway.yaml"} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := spec.Parse("slipway.yaml", data, root)
		if err != nil {
			if g != nil {
				t.Fatalf("Parse returned a group and an error: %v", err)
			}
			var errs spec.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Parse error is not a non-empty spec.Errors: %T %v", err, err)
			}
			for _, e := range errs {
				if e.File != "slipway.yaml" || e.Msg == "" || e.Line < 0 || strings.Contains(e.Msg, "\n") {
					t.Fatalf("malformed error %#v", e)
				}
			}
			return
		}
		if g == nil {
			t.Fatal("Parse returned neither a group nor an error")
		}
		if !slices.IsSortedFunc(g.Nodes, func(a, b *spec.Node) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatal("nodes are not sorted")
		}
		for _, n := range g.Nodes {
			srcs := 0
			for _, s := range []string{n.Image.Rootfs, n.Image.Archive, n.Image.Base} {
				if s != "" {
					srcs++
				}
			}
			if srcs != 1 {
				t.Fatalf("node %s has %d image sources", n.Name, srcs)
			}
			if n.Init != spec.InitSystemd && n.Init != spec.InitNone {
				t.Fatalf("node %s init %q", n.Name, n.Init)
			}
			for _, p := range n.Firewall.Published {
				if !slices.Contains(n.Firewall.Served, p) {
					t.Fatalf("node %s publishes %s without serving it", n.Name, p)
				}
			}
			for _, r := range n.Roles {
				if r.Replicas < 0 {
					t.Fatalf("role %s/%s has %d replicas", n.Name, r.Name, r.Replicas)
				}
			}
		}
	})
}
