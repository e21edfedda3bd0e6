package plan

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestProtect: a plan that deletes or replaces the claim of a protected node is refused,
// naming the node, the claim and how to go on (SPEC §6a); other plans pass.
func TestProtect(t *testing.T) {
	key := func(kind, name string) Key { return Key{Kind: kind, Namespace: "demo", Name: name} }
	webClaim := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: web-state, namespace: demo, labels: {slipway.dev/node: web}}\nspec: {storageClassName: fast}")
	webClaimLive := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: web-state, namespace: demo, resourceVersion: '3', labels: {slipway.dev/node: web}}\nspec: {storageClassName: slow}")
	oldClaim := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: old-state, namespace: demo, resourceVersion: '9', labels: {slipway.dev/node: old}}")
	oldDep := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: old, namespace: demo, resourceVersion: '8', labels: {slipway.dev/node: old}}")
	removed := Input{Group: "demo", Namespace: "demo",
		Live: map[Key]*unstructured.Unstructured{key("PersistentVolumeClaim", "old-state"): oldClaim, key("Deployment", "old"): oldDep}}
	replaced := Input{Group: "demo", Namespace: "demo", Desired: []*unstructured.Unstructured{webClaim},
		Live:      map[Key]*unstructured.Unstructured{key("PersistentVolumeClaim", "web-state"): webClaimLive},
		Immutable: map[Key]string{key("PersistentVolumeClaim", "web-state"): "spec is immutable"}}
	tests := []struct {
		name      string
		in        Input
		destroy   bool
		protected map[string]bool
		want      []ProtectedClaim // nil: no error
		wantMsg   string
	}{
		{"removed protected node", removed, false, map[string]bool{"old": true},
			[]ProtectedClaim{{Node: "old", Claim: key("PersistentVolumeClaim", "old-state"), Action: Delete, Removed: true, Reason: "the node's state on /var/lib is lost"}},
			"node old: claim demo/old-state is protected (state.protect): the node left the group file and apply would delete the claim and the node's /var/lib with it; put the node back, or to delete the claim put it back without state.protect, apply, then remove it; `slipway destroy --keep-claims` removes everything but the claims"},
		{"removed unprotected node", removed, false, map[string]bool{"web": true}, nil, ""},
		{"replaced protected claim", replaced, false, map[string]bool{"web": true},
			[]ProtectedClaim{{Node: "web", Claim: key("PersistentVolumeClaim", "web-state"), Action: Replace, Reason: "spec is immutable"}},
			"node web: claim demo/web-state is protected (state.protect): apply would replace it (spec is immutable) and lose the node's /var/lib; revert that change, or remove state.protect from node web and apply first"},
		{"replaced unprotected claim", replaced, false, nil, nil, ""},
		{"destroy", removed, true, map[string]bool{"old": true},
			[]ProtectedClaim{{Node: "old", Claim: key("PersistentVolumeClaim", "old-state"), Action: Delete, Removed: true, Reason: "the node's state on /var/lib is lost"}},
			"node old: claim demo/old-state is protected (state.protect): destroy would delete it and the node's /var/lib with it; remove state.protect from node old and apply first, or run `slipway destroy --keep-claims` to remove everything but the claims"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(tc.in)
			p.Destroy = tc.destroy
			err := Protect(p, tc.protected)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Protect = %v, want no error", err)
				}
				return
			}
			var pe *ProtectedError
			if !errors.As(err, &pe) {
				t.Fatalf("Protect = %v, want a *ProtectedError", err)
			}
			if d := cmp.Diff(tc.want, pe.Claims); d != "" {
				t.Errorf("claims (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantMsg, err.Error()); d != "" {
				t.Errorf("message (-want +got):\n%s", d)
			}
		})
	}
}
