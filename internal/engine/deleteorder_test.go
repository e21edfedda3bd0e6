package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/spec"
)

// TestDeleteOrder: destroy in a namespace slipway did not create deletes the group's objects
// in the order plan -destroy shows, against apply order (kube.ManagedKinds): what runs
// before what it uses, every managed kind placed (config, secrets, routes and monitors too).
func TestDeleteOrder(t *testing.T) {
	ctx := context.Background()
	f := newFakeCluster()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName("demo")
	f.Objects[plan.Key{Kind: "Namespace", Name: "demo"}] = ns
	want := []plan.Key{
		{Kind: "ServiceMonitor", Namespace: "demo", Name: "web-worker"},
		{Kind: "PodDisruptionBudget", Namespace: "demo", Name: "web-worker"},
		{Kind: "Deployment", Namespace: "demo", Name: "web"},
		{Kind: "Deployment", Namespace: "demo", Name: "web-worker"},
		{Kind: "HTTPRoute", Namespace: "demo", Name: "web"},
		{Kind: "TLSRoute", Namespace: "demo", Name: "web"},
		{Kind: "Service", Namespace: "demo", Name: "web"},
		{Kind: "Secret", Namespace: "demo", Name: "web-keys"},
		{Kind: "ConfigMap", Namespace: "demo", Name: "web-env"},
		{Kind: "PersistentVolumeClaim", Namespace: "demo", Name: "web-state"},
		{Kind: "ServiceAccount", Namespace: "demo", Name: "web"},
		{Kind: "NetworkPolicy", Namespace: "demo", Name: "web"},
	}
	live := map[plan.Key]*unstructured.Unstructured{}
	for _, k := range want {
		u := &unstructured.Unstructured{}
		u.SetKind(k.Kind)
		u.SetNamespace(k.Namespace)
		u.SetName(k.Name)
		u.SetLabels(map[string]string{spec.LabelGroup: "demo", spec.LabelNode: "web"})
		f.Objects[k] = u
		live[k] = u
	}
	s, err := New(Options{Kube: f}).Scope(ctx, Target{Group: &spec.Group{Name: "demo"}, Namespace: "demo", Store: &memStore{}}, DestroyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, s.Objects); d != "" {
		t.Errorf("destroy's delete order (-want +got):\n%s", d)
	}
	var shown []plan.Key
	for _, np := range destroyChanges(live, "") {
		for _, c := range np.Changes {
			shown = append(shown, c.Key)
		}
	}
	if d := cmp.Diff(want, shown); d != "" {
		t.Errorf("plan -destroy's order (-want +got):\n%s", d)
	}
}
