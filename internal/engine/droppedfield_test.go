package engine

import (
	"context"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// dryRunCounter is the fake cluster that counts the dry runs it answers: each is a request
// to the API server for real.
type dryRunCounter struct {
	*fakeCluster
	dry atomic.Int64
}

func (c *dryRunCounter) Apply(ctx context.Context, obj runtime.Object, opts kube.ApplyOptions) (*unstructured.Unstructured, error) {
	if opts.DryRun {
		c.dry.Add(1)
	}
	return c.fakeCluster.Apply(ctx, obj, opts)
}

// A field slipway applied and the file no longer sets (a node's whole placement) is a change:
// the live Deployment matches every field still desired, but its applied hash is the old one.
// Once applied, the next plan is a no-op again that costs no dry run.
func TestPlanSeesDroppedField(t *testing.T) {
	ctx := context.Background()
	g := benchGroup(t, 2)
	var jobs []image.Job
	bl, reg := &fakeBuilder{imgs: map[string]v1.Image{}}, &fakeRegistry{tags: map[string]v1.Hash{}}
	for _, n := range g.Nodes {
		j := image.Job{Name: n.Name, Repository: "reg/scale/" + n.Name, Source: image.Source{Rootfs: "one"}}
		jobs = append(jobs, j)
		reg.pushed(t, bl, j)
	}
	f := &dryRunCounter{fakeCluster: newFakeCluster()}
	tgt := Target{Group: g, Namespace: "scale", Jobs: jobs, Store: &memStore{Doc: &state.Document{Group: "scale"}}}
	e := New(Options{Kube: f, Builder: bl, Publisher: reg, Parallelism: 10})
	apply := func(what string) *plan.Plan {
		t.Helper()
		p, err := e.Plan(ctx, tgt)
		if err != nil {
			t.Fatalf("%s: plan: %v", what, err)
		}
		if err := e.Apply(ctx, p, tgt); err != nil {
			t.Fatalf("%s: apply: %v", what, err)
		}
		for k, u := range f.Objects { // the controllers' work: every Deployment ready
			if k.Kind == "Deployment" {
				u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(),
					"replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1)}
			}
		}
		return p
	}
	placed := spec.Placement{NodeSelector: map[string]string{"type": "kwok"},
		Tolerations: []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
	g.Nodes[0].Placement = placed
	apply("with a placement")
	dep := plan.Key{Kind: "Deployment", Namespace: "scale", Name: g.Nodes[0].Name}
	if _, found, _ := unstructured.NestedSlice(f.Objects[dep].Object, "spec", "template", "spec", "tolerations"); !found {
		t.Fatalf("the live Deployment has no tolerations: %v", f.Objects[dep].Object["spec"])
	}

	g.Nodes[0].Placement = spec.Placement{}
	f.dry.Store(0)
	p := apply("without it")
	var changes []string
	for _, n := range p.Nodes {
		for _, c := range n.Changes {
			changes = append(changes, string(c.Action)+" "+c.Key.String())
			if c.Key == dep && !plan.DiffTouches(c.Diff, "spec.template.spec.tolerations") {
				t.Errorf("the Deployment's update does not show the tolerations going: %+v", c.Diff)
			}
		}
	}
	if len(changes) != 1 || changes[0] != "update "+dep.String() {
		t.Errorf("plan without the placement: changes %v, want the update of %s alone", changes, dep)
	}
	if n := f.dry.Load(); n != 1 {
		t.Errorf("plan without the placement: %d dry runs, want 1 (the Deployment)", n)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(f.Objects[dep].Object, "spec", "template", "spec", "tolerations"); found {
		t.Errorf("the live Deployment still has its tolerations after apply")
	}

	f.dry.Store(0)
	p, err := e.Plan(ctx, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if p.HasChanges() {
		t.Errorf("the plan after apply has changes: %+v", p.Nodes)
	}
	if n := f.dry.Load(); n != 0 {
		t.Errorf("the no-op plan made %d dry runs, want none", n)
	}
}
