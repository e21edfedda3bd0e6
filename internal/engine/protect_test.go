package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestProtectedNodes: a node of the file is protected as the file says (so an apply without
// protect lifts it), a node that left the file as the state last recorded it.
func TestProtectedNodes(t *testing.T) {
	g := &spec.Group{Name: "demo", Nodes: []*spec.Node{
		{Name: "web", State: spec.StateVolume{Protect: true}},
		{Name: "db"},
	}}
	tests := []struct {
		name string
		doc  *state.Document
		want map[string]bool
	}{
		{"no state", nil, map[string]bool{"web": true}},
		{"the file wins over the state", &state.Document{Nodes: map[string]*state.NodeState{
			"web": {}, "db": {Protect: true}}}, map[string]bool{"web": true}},
		{"a removed node keeps the state's", &state.Document{Nodes: map[string]*state.NodeState{
			"old": {Protect: true}, "gone": {}}}, map[string]bool{"web": true, "old": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, lane.ProtectedNodes(g, tc.doc)); d != "" {
				t.Errorf("protectedNodes (-want +got):\n%s", d)
			}
		})
	}
}

// TestKeepClaimsKeepsTheVolumesRecord (issue 35 item 1): destroy --keep-claims keeps what the
// state knows of each kept volume, the version its data ran ready with and the copy it holds,
// beside the machine ID and the protection; the rest of the node's record goes.
func TestKeepClaimsKeepsTheVolumesRecord(t *testing.T) {
	ctx := context.Background()
	f := newFakeCluster()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName("demo")
	ns.SetLabels(map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: "demo"})
	f.Objects[plan.Key{Kind: "Namespace", Name: "demo"}] = ns
	for _, k := range []plan.Key{{Kind: "Deployment", Namespace: "demo", Name: "db"}, {Kind: "PersistentVolumeClaim", Namespace: "demo", Name: "db-state"}} {
		u := &unstructured.Unstructured{}
		u.SetKind(k.Kind)
		u.SetNamespace(k.Namespace)
		u.SetName(k.Name)
		u.SetLabels(map[string]string{spec.LabelGroup: "demo", spec.LabelNode: "db"})
		f.Objects[k] = u
	}
	store := &memStore{Doc: &state.Document{Group: "demo", Namespace: "demo", Nodes: map[string]*state.NodeState{"db": {
		MachineID: "id-db", Protect: true, Image: state.ImageRecord{Ref: "r/demo/db", Digest: "sha256:aa"},
		ReadyTemplate: "abc", StateVersion: "14", Copy: &state.StateCopy{From: "14", To: "15"},
	}}}}
	g := &spec.Group{Name: "demo", Nodes: []*spec.Node{{Name: "db", State: spec.StateVolume{Protect: true}}}}
	if _, err := New(Options{Kube: f}).Destroy(ctx, Target{Group: g, Namespace: "demo", Store: store}, DestroyOptions{KeepClaims: true}); err != nil {
		t.Fatal(err)
	}
	want := &state.NodeState{MachineID: "id-db", Protect: true, StateVersion: "14", Copy: &state.StateCopy{From: "14", To: "15"}}
	if d := cmp.Diff(want, store.Doc.Nodes["db"]); d != "" {
		t.Errorf("node db's record after destroy --keep-claims (-want +got):\n%s", d)
	}
}
