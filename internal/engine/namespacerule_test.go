package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/image"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// TestNamespaceBelongsToOneDeployment (issue 46 items 1, 6): a plan refuses a system
// namespace, and one that holds objects another deployment made (named, with the key an
// earlier release gave this target explained), unless the file shares the namespace; it
// changes nothing either way. Stand-ins: the fake cluster and an in-memory state.
func TestNamespaceBelongsToOneDeployment(t *testing.T) {
	for _, tc := range []struct {
		name, ns, target, other string
		shared                  bool
		want                    string // "" : the plan goes on
	}{
		{name: "kube-system", ns: "kube-system", want: "namespace kube-system is a system namespace (default and kube-* are the cluster's own)"},
		{name: "default", ns: "default", want: "namespace default is a system namespace"},
		{name: "kube-public, shared", ns: "kube-public", shared: true, want: "is a system namespace"},
		{name: "another group's objects", ns: "scale", other: "shop", want: "namespace scale holds objects of another deployment, shop (Deployment web): a namespace belongs to one deployment"},
		{name: "a group named like the target", ns: "scale-front", target: "front", other: "scale-front", want: "scale-front is the key releases before deployment identities gave group scale, target front"},
		{name: "another deployment id's objects", ns: "scale", other: "scale.all.x7", want: "another deployment, scale.all.x7"},
		{name: "shared", ns: "scale", other: "shop", shared: true},
		{name: "its own only", ns: "scale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole := benchGroup(t, 2)
			if tc.target != "" {
				whole.Nodes[0].App, whole.Nodes[1].App = tc.target, tc.target
			}
			whole.SharedNamespace = tc.shared
			g, err := whole.ForTarget(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			var jobs []image.Job
			for _, n := range g.Nodes {
				jobs = append(jobs, image.Job{Name: n.Name, Repository: "reg/" + tc.ns + "/" + n.Name, Source: image.Source{Rootfs: "one"}})
			}
			f := newFakeCluster()
			if tc.other != "" {
				d := &unstructured.Unstructured{}
				d.SetAPIVersion("apps/v1")
				d.SetKind("Deployment")
				d.SetName("web")
				d.SetNamespace(tc.ns)
				d.SetLabels(map[string]string{spec.LabelGroup: tc.other, spec.LabelManagedBy: spec.ManagedBy, spec.LabelName: "web"})
				f.Objects[plan.Key{Kind: "Deployment", Namespace: tc.ns, Name: "web"}] = d
			}
			store := &memStore{}
			e := New(Options{Kube: f, Builder: &fakeBuilder{imgs: map[string]v1.Image{}}, Publisher: &fakeRegistry{tags: map[string]v1.Hash{}}, Parallelism: 10})
			_, err = e.Plan(context.Background(), Target{Group: g, Namespace: tc.ns, Jobs: jobs, Store: store})
			if tc.want == "" {
				var pe *PreflightError
				if errors.As(err, &pe) {
					t.Fatalf("Plan refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Plan: %v, want an error with %q", err, tc.want)
			}
			if store.Writes != 0 || len(f.Calls()) != 0 {
				t.Errorf("the plan wrote: %d state writes, cluster calls %q", store.Writes, f.Calls())
			}
		})
	}
}
