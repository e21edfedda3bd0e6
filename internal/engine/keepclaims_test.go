package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestApplyKeepClaims (issue 38): apply --keep-claims of a group a protected node left (it
// moved to another target) removes the node's Deployment but not its claim, and keeps its
// state record cut to what reattaches the claim; the next plan with --keep-claims changes
// nothing and keeps the record; without it, the protected claim refuses the plan.
func TestApplyKeepClaims(t *testing.T) {
	ctx := context.Background()
	f := newFakeCluster()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName("demo")
	ns.SetLabels(map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: "demo"})
	f.Objects[plan.Key{Kind: "Namespace", Name: "demo"}] = ns
	dep, claim := plan.Key{Kind: "Deployment", Namespace: "demo", Name: "db"}, plan.Key{Kind: "PersistentVolumeClaim", Namespace: "demo", Name: "db-state"}
	for _, k := range []plan.Key{dep, claim} {
		u := &unstructured.Unstructured{}
		u.SetKind(k.Kind)
		u.SetNamespace(k.Namespace)
		u.SetName(k.Name)
		u.SetLabels(map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: "demo", spec.LabelNode: "db"})
		f.Objects[k] = u
	}
	store := &memStore{Doc: &state.Document{Group: "demo", Namespace: "demo", Nodes: map[string]*state.NodeState{"db": {
		MachineID: "id-db", Protect: true, Image: state.ImageRecord{Ref: "r/demo/db", Digest: "sha256:aa"}, StateVersion: "3",
	}}}}
	g := &spec.Group{Name: "demo", File: "slipway.yaml"}
	e := New(Options{Kube: f})
	kept := Target{Group: g, Namespace: "demo", Store: store, KeepClaims: true}
	p, err := e.PlanForApply(ctx, kept)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]plan.Key{claim}, p.Node("db").KeptClaims); d != "" {
		t.Fatalf("kept claims (-want +got):\n%s", d)
	}
	if err := e.Apply(ctx, p, kept); err != nil {
		t.Fatal(err)
	}
	if f.Objects[dep] != nil || f.Objects[claim] == nil {
		t.Errorf("after apply --keep-claims: Deployment there %v, claim there %v; want false, true", f.Objects[dep] != nil, f.Objects[claim] != nil)
	}
	want := &state.NodeState{MachineID: "id-db", Protect: true, StateVersion: "3"}
	if d := cmp.Diff(want, store.Doc.Nodes["db"]); d != "" {
		t.Errorf("node db's record (-want +got):\n%s", d)
	}
	p, err = e.PlanForApply(ctx, kept)
	if err != nil || p.HasChanges() {
		t.Fatalf("second plan with --keep-claims: changes %v, error %v", p != nil && p.HasChanges(), err)
	}
	if err := e.Apply(ctx, p, kept); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, store.Doc.Nodes["db"]); d != "" {
		t.Errorf("node db's record after a run without changes (-want +got):\n%s", d)
	}
	if _, err := e.PlanForApply(ctx, Target{Group: g, Namespace: "demo", Store: store}); err == nil {
		t.Error("without --keep-claims, the protected kept claim's delete was not refused")
	}
}
