package engine

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
	"slipway.dev/slipway/internal/state"
)

// TestDestroyScopeWithoutState (issue 46 item 9, and the shared namespace): a destroy that
// finds no state does not delete, on the group label alone, a namespace holding the group's
// claims (the old namespace of a --move-namespace keeps them for the operator); with the
// state, or --keep-claims, it goes on; a shared namespace is never the destroy's to delete.
// Stand-ins: the fake cluster and an in-memory state.
func TestDestroyScopeWithoutState(t *testing.T) {
	for _, tc := range []struct {
		name            string
		doc             *state.Document
		keepClaims      bool
		shared          bool
		wantErr         string
		wantOwnNS       bool
		wantObjectCount int
	}{
		{name: "no state, a claim", wantErr: "no state here lists namespace mv1, yet it holds the group's claims web-state"},
		{name: "no state, --keep-claims", keepClaims: true, wantObjectCount: 1},
		{name: "its state", doc: &state.Document{Group: "mv", Namespace: "mv1", Nodes: map[string]*state.NodeState{"web": {MachineID: "m"}}}, wantOwnNS: true},
		{name: "its state, shared namespace", shared: true, doc: &state.Document{Group: "mv", Namespace: "mv1", Nodes: map[string]*state.NodeState{"web": {MachineID: "m"}}}, wantObjectCount: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &spec.Group{Name: "mv", Namespace: "mv1", SharedNamespace: tc.shared, Nodes: []*spec.Node{{Name: "web"}}}
			f := newFakeCluster()
			ns := &unstructured.Unstructured{}
			ns.SetAPIVersion("v1")
			ns.SetKind("Namespace")
			ns.SetName("mv1")
			ns.SetLabels(map[string]string{spec.LabelGroup: "mv", spec.LabelManagedBy: spec.ManagedBy})
			f.Objects[plan.Key{Kind: "Namespace", Name: "mv1"}] = ns
			for _, kind := range []string{"PersistentVolumeClaim", "Service"} {
				o := &unstructured.Unstructured{}
				o.SetAPIVersion("v1")
				o.SetKind(kind)
				o.SetNamespace("mv1")
				name := "web"
				if kind == "PersistentVolumeClaim" {
					name = "web-state"
				}
				o.SetName(name)
				o.SetLabels(map[string]string{spec.LabelGroup: "mv", spec.LabelManagedBy: spec.ManagedBy})
				f.Objects[plan.Key{Kind: kind, Namespace: "mv1", Name: name}] = o
			}
			e := New(Options{Kube: f})
			s, err := e.Scope(context.Background(), Target{Group: g, Namespace: "mv1", Store: &memStore{Doc: tc.doc}}, DestroyOptions{KeepClaims: tc.keepClaims})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Scope: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.OwnNamespace != tc.wantOwnNS || len(s.Objects) != tc.wantObjectCount {
				t.Errorf("scope: namespace deleted %v (want %v), %d objects %v (want %d)", s.OwnNamespace, tc.wantOwnNS, len(s.Objects), s.Objects, tc.wantObjectCount)
			}
		})
	}
}
