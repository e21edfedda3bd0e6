package kube_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// TestListAcrossNamespaces (issue 38): with no namespace, the LISTs a wave run shares go
// across every namespace, selected by label: the objects and the namespaces of the groups
// named, not another group's beside them.
func TestListAcrossNamespaces(t *testing.T) {
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := fmt.Sprintf("across-%x", time.Now().UnixNano()%0xffffff)
	groups := []string{run + "-a", run + "-b"}
	for _, g := range groups {
		labels := map[string]string{"slipway.dev/group": g}
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: g, Labels: labels}}
		if _, err := c.Apply(ctx, ns, kube.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.DeleteNamespaceAndWait(context.Background(), g, "") })
		for name, lbls := range map[string]map[string]string{"mine": labels, "theirs": {"slipway.dev/group": run + "-other"}} {
			cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g, Labels: lbls}}
			if _, err := c.Apply(ctx, cm, kube.ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sel := "slipway.dev/group in (" + groups[0] + "," + groups[1] + ")"
	objs, err := c.ListManagedObjects(ctx, "", sel)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range objs {
		got = append(got, k.String())
	}
	slices.Sort(got)
	want := []string{"ConfigMap " + groups[0] + "/mine", "ConfigMap " + groups[1] + "/mine"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("objects across namespaces (-want +got):\n%s", d)
	}
	nss, err := c.ListNamespaces(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(groups, slices.Sorted(maps.Keys(nss))); d != "" {
		t.Errorf("namespaces (-want +got):\n%s", d)
	}
	if _, err := c.ListWorkloads(ctx, "", sel); err != nil {
		t.Errorf("workloads across namespaces: %v", err)
	}
}
