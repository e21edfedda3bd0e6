package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestComputeOwnership: an object slipway did not make is a conflict, not a create; an object
// being deleted is shown as such, never as unchanged; a namespace being deleted is reported
// even when it is not among the desired objects (issue 11 items 3-5).
func TestComputeOwnership(t *testing.T) {
	svc := obj(t, "apiVersion: v1\nkind: Service\nmetadata: {name: solo, namespace: demo, labels: {slipway.dev/group: demo, slipway.dev/node: solo}}\nspec: {type: LoadBalancer}")
	claim := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: solo-state, namespace: demo, labels: {slipway.dev/group: demo, slipway.dev/node: solo}}")
	kubectlSvc := obj(t, "apiVersion: v1\nkind: Service\nmetadata: {name: solo, namespace: demo, resourceVersion: '3'}\nspec: {type: ClusterIP}")
	otherSvc := obj(t, "apiVersion: v1\nkind: Service\nmetadata: {name: solo, namespace: demo, labels: {slipway.dev/group: other}}")
	claimGoing := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: solo-state, namespace: demo, deletionTimestamp: '2026-12-01T00:00:00Z', labels: {slipway.dev/group: demo, slipway.dev/node: solo}}")
	nsGoing := obj(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo, deletionTimestamp: '2026-12-01T00:00:00Z'}")
	key := func(kind, name string) Key { return Key{Kind: kind, Namespace: "demo", Name: name} }
	nsKey := Key{Kind: "Namespace", Name: "demo"}

	for _, tc := range []struct {
		name    string
		in      Input
		want    []string // "node: action key [destructive]"
		blocked string   // in Blocked's error; "" = not blocked
		node    string   // in NodeBlocked("solo")'s error; "" = not blocked
	}{
		{
			name: "object made by kubectl",
			in: Input{Desired: []*unstructured.Unstructured{svc},
				Foreign: map[Key]*unstructured.Unstructured{key("Service", "solo"): kubectlSvc}},
			want:    []string{"solo: conflict Service demo/solo"},
			blocked: "Service demo/solo exists and slipway did not make it",
		},
		{
			name: "object of another group",
			in: Input{Desired: []*unstructured.Unstructured{svc},
				Foreign: map[Key]*unstructured.Unstructured{key("Service", "solo"): otherSvc}},
			want:    []string{"solo: conflict Service demo/solo"},
			blocked: "it belongs to group other",
		},
		{
			name: "claim being deleted",
			in: Input{Desired: []*unstructured.Unstructured{claim},
				Live: map[Key]*unstructured.Unstructured{key("PersistentVolumeClaim", "solo-state"): claimGoing}},
			want: []string{"solo: terminating PersistentVolumeClaim demo/solo-state destructive"},
			node: "the node's state on /var/lib is lost",
		},
		{
			name: "namespace being deleted, not slipway's",
			in: Input{Desired: []*unstructured.Unstructured{svc}, ForeignNamespace: true,
				Live: map[Key]*unstructured.Unstructured{nsKey: nsGoing}},
			want:    []string{": terminating Namespace demo", "solo: create Service demo/solo"},
			blocked: "Namespace demo: being deleted outside slipway",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Group, tc.in.Namespace = "demo", "demo"
			p := Compute(tc.in)
			var got []string
			for _, np := range p.Nodes {
				for _, c := range np.Changes {
					l := np.Node + ": " + string(c.Action) + " " + c.Key.String()
					if c.Destructive {
						l += " destructive"
					}
					got = append(got, l)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
			if !p.HasChanges() {
				t.Error("HasChanges = false: plan would say No changes.")
			}
			if p.ForeignNamespace != tc.in.ForeignNamespace {
				t.Errorf("ForeignNamespace = %v", p.ForeignNamespace)
			}
			for _, b := range []struct {
				what, want string
				err        error
			}{{"Blocked", tc.blocked, p.Blocked()}, {"NodeBlocked", tc.node, p.NodeBlocked("solo")}} {
				switch {
				case b.want == "" && b.err != nil:
					t.Errorf("%s = %v, want nil", b.what, b.err)
				case b.want != "" && (b.err == nil || !strings.Contains(b.err.Error(), b.want)):
					t.Errorf("%s = %v, want an error containing %q", b.what, b.err, b.want)
				}
			}
		})
	}
}
