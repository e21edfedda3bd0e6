package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A node whose Deployment is as desired but whose rollout the state says is in flight, or
// whose pods are not ready, is followed again by apply (issue 11 item 1): plan never says
// `No changes.` for it. While suspended, resume follows it, and plan says so without a change.
func TestComputeFollowsUnfinishedRollouts(t *testing.T) {
	dep := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: demo, labels: {slipway.dev/node: web}}\nspec: {replicas: 1}")
	live := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: demo, resourceVersion: '5', labels: {slipway.dev/node: web}}\nspec: {replicas: 1}")
	changed := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: demo, resourceVersion: '5', labels: {slipway.dev/node: web}}\nspec: {replicas: 0}")
	k := Key{Kind: "Deployment", Namespace: "demo", Name: "web"}
	const running = "r/web@sha256:a"
	follow := func(reason string) []NodePlan {
		return []NodePlan{{Node: "web", Changes: []Change{{Key: k, Action: Update, ResourceVersion: "5", Reason: reason}}}}
	}
	for _, tc := range []struct {
		name        string
		live        *unstructured.Unstructured
		suspended   bool
		interrupted map[string]string
		notReady    map[string]string
		stateImage  string // "": the running image
		wantNodes   []NodePlan
		wantDrift   []Drift
	}{
		{name: "interrupted", live: live, interrupted: map[string]string{"web": ""},
			wantNodes: follow(InterruptedReason)},
		{name: "not ready", live: live, notReady: map[string]string{"web": "0 of 1 pods ready: NotReady"},
			wantNodes: follow("it is not ready (0 of 1 pods ready: NotReady): apply waits for it and rolls it back when it fails")},
		{name: "interrupted wins over not ready", live: live, interrupted: map[string]string{"web": ""}, notReady: map[string]string{"web": "0 of 1 pods ready"},
			wantNodes: follow(InterruptedReason)},
		{name: "a change of its own is followed anyway", live: changed, interrupted: map[string]string{"web": ""},
			wantNodes: []NodePlan{{Node: "web", Changes: []Change{{Key: k, Action: Update, ResourceVersion: "5",
				Diff: []FieldDiff{{Path: "spec.replicas", Old: "0", New: "1"}}}}}}},
		{name: "suspended: resume follows it", live: live, suspended: true, interrupted: map[string]string{"web": "applied while suspended"},
			wantNodes: []NodePlan{{Node: "web"}},
			wantDrift: []Drift{{Node: "web", Running: running, State: running, Note: SuspendedPendingNote}}},
		{name: "suspended, killed before the Deployment changed: resume follows it", live: live, suspended: true,
			interrupted: map[string]string{"web": ""}, stateImage: "r/web@sha256:b",
			wantNodes: []NodePlan{{Node: "web"}},
			wantDrift: []Drift{{Node: "web", Running: running, State: "r/web@sha256:b", Note: SuspendedPendingNote}}},
		{name: "ready and recorded", live: live, wantNodes: []NodePlan{{Node: "web"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.stateImage == "" {
				tc.stateImage = running
			}
			p := Compute(Input{Group: "demo", Namespace: "demo", Suspended: tc.suspended,
				Desired:       []*unstructured.Unstructured{dep},
				Live:          map[Key]*unstructured.Unstructured{k: tc.live},
				DryRun:        map[Key]*unstructured.Unstructured{k: dep},
				RunningImages: map[string]string{"web": running},
				StateImages:   map[string]string{"web": tc.stateImage},
				Interrupted:   tc.interrupted, NotReady: tc.notReady,
			})
			if d := cmp.Diff(tc.wantNodes, p.Nodes); d != "" {
				t.Errorf("nodes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantDrift, p.Drift); d != "" {
				t.Errorf("drift (-want +got):\n%s", d)
			}
			if want := len(tc.wantNodes[0].Changes) > 0; p.HasChanges() != want {
				t.Errorf("HasChanges = %v, want %v", p.HasChanges(), want)
			}
		})
	}
}
