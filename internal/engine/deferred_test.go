package engine

import (
	"context"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/event"
	"slipway.dev/slipway/internal/plan"
)

// A plan of unchanged objects holds stubs of them, not the objects (they were found unchanged
// while typed); materialized, they are the objects a plan of a new group converted. Applied,
// a Deployment followed after all (not ready) goes out whole: the fake, like kube, refuses a
// stub.
func TestPlanDefersWhatIsUnchanged(t *testing.T) {
	ctx := context.Background()
	e, tgt, f, first := benchFirstPlan(t, 3, true)
	want := make([]*unstructured.Unstructured, len(first.Desired))
	for i, d := range first.Desired {
		if plan.IsStub(d) {
			t.Fatalf("first plan: %s is a stub", plan.KeyOf(d))
		}
		want[i] = d.DeepCopy()
	}
	if err := e.Apply(ctx, first, tgt); err != nil {
		t.Fatal(err)
	}
	for k, u := range f.Objects { // the controllers' work: every Deployment ready
		if k.Kind == "Deployment" {
			u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(),
				"replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1)}
		}
	}
	// n002's rollout in flight, as an apply killed while it waited leaves it: plan follows it.
	doc := tgt.Store.(*memStore).Doc
	doc.Nodes["n002"].LastRollout = &event.Rollout{Result: event.RolloutInProgress, Message: "killed"}

	p, err := e.Plan(ctx, tgt)
	if err != nil {
		t.Fatal(err)
	}
	stubs := 0
	for _, d := range p.Desired {
		if plan.IsStub(d) {
			stubs++
		}
	}
	if stubs != len(want) || len(p.Deferred) != len(want) {
		t.Errorf("second plan: %d stubs, %d deferred, want %d of each", stubs, len(p.Deferred), len(want))
	}
	if got := p.Counts().Update; got != 1 {
		t.Errorf("second plan: %d updates, want n002's Deployment followed", got)
	}
	f.ResetCalls()
	keep := &plan.Plan{Desired: append([]*unstructured.Unstructured(nil), p.Desired...), Deferred: maps.Clone(p.Deferred)}
	if err := e.Apply(ctx, p, tgt); err != nil {
		t.Fatalf("apply of the followed Deployments: %v", err)
	}
	if diff := cmp.Diff([]string{"apply Deployment n002"}, f.Calls()); diff != "" {
		t.Errorf("calls of the second apply (-want +got):\n%s", diff)
	}
	live := f.Objects[plan.Key{Kind: "Deployment", Namespace: "scale", Name: "n002"}]
	if _, found, _ := unstructured.NestedMap(live.Object, "spec", "template"); !found {
		t.Errorf("Deployment n002 applied without its template: %v", live.Object)
	}
	if err := keep.Materialize(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, keep.Desired); diff != "" {
		t.Errorf("materialized (-first plan's objects +materialized):\n%s", diff)
	}
}
