package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// benchGroup loads a group shaped as the bench's (bench/setup.go writeGroup): n nodes, each a
// tiny rootfs of its own and port 80 served and published.
func benchGroup(b testing.TB, n int) *spec.Group { return namedGroup(b, "scale", n) }

// namedGroup is a group of n nodes named name, in the namespace of that name.
func namedGroup(b testing.TB, name string, n int) *spec.Group {
	b.Helper()
	dir := b.TempDir()
	var y strings.Builder
	fmt.Fprintf(&y, "group: %s\nnamespace: %s\ndefaults:\n  state: {size: 1Gi}\nnodes:\n", name, name)
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
		objs, err := desiredObjects(t, images, ids, nil, nil, features{}, false, render.Input{})
		if err != nil {
			b.Fatal(err)
		}
		if len(objs) < 5000 {
			b.Fatalf("%d objects", len(objs))
		}
	}
}

// benchFirstPlan is an engine on the fake cluster, a target of n nodes in the bench's shape
// (benchGroup), and its first plan; the images are in the registry already when pushed.
func benchFirstPlan(b testing.TB, n int, pushed bool) (*Engine, Target, *fakeCluster, *plan.Plan) {
	b.Helper()
	g := benchGroup(b, n)
	var jobs []image.Job
	for _, nd := range g.Nodes {
		jobs = append(jobs, image.Job{Name: nd.Name, Repository: "reg/scale/" + nd.Name, Source: image.Source{Rootfs: "one"}})
	}
	f := newFakeCluster()
	bl, reg := &fakeBuilder{imgs: map[string]v1.Image{}}, &fakeRegistry{tags: map[string]v1.Hash{}}
	if pushed {
		for _, j := range jobs {
			reg.pushed(b, bl, j)
		}
	}
	tgt := Target{Group: g, Namespace: "scale", Jobs: jobs, Store: &memStore{Doc: &state.Document{Group: "scale"}}}
	e := New(Options{Kube: f, Builder: bl, Publisher: reg, Parallelism: 10})
	p, err := e.Plan(context.Background(), tgt)
	if err != nil {
		b.Fatal(err)
	}
	return e, tgt, f, p
}

// BenchmarkNoOpPlan is a plan of n unchanged nodes against the fake cluster: the engine's and
// the plan's own share of a no-op, without the API server, the registry or the disk. ns/op
// per node at 1,000 and 2,000 says whether that share grows faster than the group.
func BenchmarkNoOpPlan(b *testing.B) {
	for _, n := range []int{1000, 2000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			e, tgt, f, p := benchFirstPlan(b, n, true)
			for _, d := range p.Desired {
				if _, err := f.Apply(ctx, d, applyOptions()); err != nil {
					b.Fatal(err)
				}
			}
			for k, u := range f.Objects { // the controllers' work: every Deployment ready
				if k.Kind == "Deployment" {
					u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(),
						"replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1)}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				p, err := e.Plan(ctx, tgt)
				if err != nil {
					b.Fatal(err)
				}
				if p.HasChanges() {
					b.Fatalf("the second plan has changes: %+v", p.Nodes[0])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/node")
		})
	}
}

// BenchmarkFirstApplySteps2000 builds the steps of a first apply of 2,000 nodes (10,000
// creates): a lookup per node that scans every change makes it grow with the square.
func BenchmarkFirstApplySteps2000(b *testing.B) {
	_, tgt, _, p := benchFirstPlan(b, 2000, false)
	for b.Loop() {
		plan.BuildSteps(p, tgt.Group, func(*spec.Node) time.Duration { return time.Minute })
	}
}
