package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// newCountingCluster is the stand-in for the API server in the tests of SharedReads: the
// engine's fake cluster, whose reads honour their namespace ("": every one) and label selector
// as the API server's do, each read counted.
var newCountingCluster = enginetest.NewLister

// sortedKeys are the keys of objs as kind/namespace/name, sorted.
var sortedKeys = enginetest.Keys

func groupLabel(g string) map[string]string { return map[string]string{spec.LabelGroup: g} }

// TestSharedReadsReadOnce (issue 38): the reads of a wave run's groups are one read per kind
// across their namespaces, and each group gets exactly what a read of its own namespace by its
// own label gets: not another namespace's objects, not another group's in its namespace. A
// namespace not covered, a read by another selector and every read after Stop go to the
// cluster as they are.
func TestSharedReadsReadOnce(t *testing.T) {
	ctx := context.Background()
	c := newCountingCluster()
	for _, g := range []string{"a", "b", "c"} {
		c.Put("v1", "Namespace", "", g, groupLabel(g))
		c.Put("apps/v1", "Deployment", g, "web", groupLabel(g))
		c.Put("v1", "Service", g, "web", groupLabel(g))
	}
	c.Put("v1", "ConfigMap", "a", "theirs", nil)                      // someone else's, unlabelled
	c.Put("apps/v1", "Deployment", "a", "other", groupLabel("other")) // a group not in the run
	c.Put("apps/v1", "Deployment", "b", "from-a", groupLabel("a"))    // group a's, in b's namespace
	c.Put("v1", "Namespace", "", "d", nil)                            // a namespace slipway did not make
	c.Put("apps/v1", "Deployment", "d", "web", groupLabel("d"))
	c.Put("v1", "Service", "d", "web", groupLabel("d")) // in it, group d's
	s := NewSharedReads(c)
	for _, g := range []string{"a", "b", "d"} {
		s.Cover(g, g)
	}
	c.Reads()
	for range 2 { // two engines' reads of each: one read in all
		for _, g := range []string{"a", "b", "d"} {
			want, _ := c.Cluster.ListManagedObjects(ctx, g, "")
			want = ofGroup(want, g)
			got, err := s.ListManagedObjects(ctx, g, lane.GroupSelector(g))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(sortedKeys(want), sortedKeys(got)); d != "" {
				t.Errorf("objects of group %s (-want +got):\n%s", g, d)
			}
			wl, err := s.ListWorkloads(ctx, g, lane.GroupSelector(g))
			if err != nil {
				t.Fatal(err)
			}
			if len(wl.Deployments) != 1 || wl.Deployments[0].Namespace != g || wl.Deployments[0].Labels[spec.LabelGroup] != g {
				t.Errorf("workloads of group %s: %d Deployments, want its one", g, len(wl.Deployments))
			}
			ns, err := s.Namespace(ctx, g)
			if err != nil || ns == nil || ns.GetName() != g {
				t.Errorf("namespace %s: %v, %v", g, ns, err)
			}
		}
	}
	labelled, ok := s.Labelled(ctx, "a")
	if want := []string{"Deployment/a/web", "Service/a/web"}; !ok || !cmp.Equal(want, sortedKeys(labelled)) {
		t.Errorf("labelled objects of namespace a: %v (%v), want the run's groups' only: %v", sortedKeys(labelled), ok, want)
	}
	run := `slipway.dev/group in (a,b,d)`
	want := map[string]int{
		`list objects in "" by "` + run + `"`:   1,
		`list workloads in "" by "` + run + `"`: 1,
		`list namespaces by "` + run + `"`:      1,
		"get namespace d":                       1, // not labelled: read once, for both engines
	}
	if d := cmp.Diff(want, c.Reads()); d != "" {
		t.Errorf("reads (-want +got):\n%s", d)
	}
	// Not shared: a namespace not covered, another selector; then every read after Stop.
	_, _ = s.ListManagedObjects(ctx, "c", lane.GroupSelector("c"))
	_, _ = s.ListManagedObjects(ctx, "a", "")
	s.Stop()
	_, _ = s.ListManagedObjects(ctx, "a", lane.GroupSelector("a"))
	_, _ = s.Namespace(ctx, "a")
	if _, ok := s.Labelled(ctx, "a"); ok {
		t.Error("labelled answered after Stop")
	}
	want = map[string]int{`list objects in "c" by "slipway.dev/group=c"`: 1, `list objects in "a" by ""`: 1,
		`list objects in "a" by "slipway.dev/group=a"`: 1, "get namespace a": 1}
	if d := cmp.Diff(want, c.Reads()); d != "" {
		t.Errorf("reads not shared (-want +got):\n%s", d)
	}
}

// ofGroup are the objects of all that carry group's label: what a read by its label gets.
func ofGroup(all map[plan.Key]plan.Object, group string) map[plan.Key]plan.Object {
	out := map[plan.Key]plan.Object{}
	for k, o := range all {
		if o.GetLabels()[spec.LabelGroup] == group {
			out[k] = o
		}
	}
	return out
}

// TestPlanWithSharedReads (issue 38): two groups planned through one SharedReads read the
// cluster once per kind, and plan as they do alone: a group with nothing changed plans no
// change from the shared read alone; a group whose Service name someone else's object holds
// (no label: not in the shared read) reads its whole namespace and plans the conflict.
func TestPlanWithSharedReads(t *testing.T) {
	ctx := context.Background()
	c := newCountingCluster()
	bl, reg := &fakeBuilder{imgs: map[string]v1.Image{}}, &fakeRegistry{tags: map[string]v1.Hash{}}
	targets := map[string]Target{}
	for _, name := range []string{"a", "b"} {
		g := namedGroup(t, name, 2)
		var jobs []image.Job
		for _, nd := range g.Nodes {
			j := image.Job{Name: nd.Name, Repository: "reg/" + name + "/" + nd.Name, Source: image.Source{Rootfs: name + nd.Name}}
			reg.pushed(t, bl, j)
			jobs = append(jobs, j)
		}
		targets[name] = Target{Group: g, Namespace: name, Jobs: jobs, Store: &memStore{Doc: &state.Document{Group: name}}}
		p, err := New(Options{Kube: c, Builder: bl, Publisher: reg}).Plan(ctx, targets[name])
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Desired {
			if _, err := c.Apply(ctx, d, applyOptions()); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k, u := range c.Objects { // the controllers' work: every Deployment ready
		if k.Kind == "Deployment" {
			u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(),
				"replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1)}
		}
	}
	delete(c.Objects, plan.Key{Kind: "Service", Namespace: "a", Name: "n000"})
	c.Put("v1", "Service", "a", "n000", nil) // someone else's, holding the name
	alone := map[string]plan.Totals{}
	for name, tgt := range targets {
		p, err := New(Options{Kube: c, Builder: bl, Publisher: reg}).Plan(ctx, tgt)
		if err != nil {
			t.Fatal(err)
		}
		alone[name] = p.Totals()
	}
	if alone["a"].Conflict != 1 || !alone["b"].Zero() {
		t.Fatalf("plans alone: a %+v, b %+v; want a's conflict and no change of b", alone["a"], alone["b"])
	}
	s := NewSharedReads(c)
	s.Cover("a", "a")
	s.Cover("b", "b")
	c.Reads()
	shared := map[string]plan.Totals{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, tgt := range targets {
		wg.Go(func() {
			p, err := New(Options{Kube: s, Builder: bl, Publisher: reg}).Plan(ctx, tgt)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			shared[name] = p.Totals()
			mu.Unlock()
		})
	}
	wg.Wait()
	if d := cmp.Diff(alone, shared); d != "" {
		t.Errorf("plans with shared reads (-alone +shared):\n%s", d)
	}
	want := map[string]int{
		`list objects in "" by "slipway.dev/group in (a,b)"`: 1,
		`list namespaces by "slipway.dev/group in (a,b)"`:    1,
		`list objects in "a" by ""`:                          1, // a's Service n000 is not in it
	}
	if d := cmp.Diff(want, c.Reads()); d != "" {
		t.Errorf("reads (-want +got):\n%s", d)
	}
}
