package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"

	"slipway.dev/slipway/internal/plan"
)

func deployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name, "slipway.dev/group": "kubetest"}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "example.invalid/x:1"}}},
			},
		},
	}
}

// Apply, list, scale, watch and delete against the dev cluster's API server.
func TestClientAgainstDevCluster(t *testing.T) {
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := fmt.Sprintf("kubetest-%x", time.Now().UnixNano()%0xffffff)
	nsObj := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if _, err := c.Apply(ctx, nsObj, kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteNamespaceAndWait(context.Background(), ns, "") })

	// A dry run stores nothing.
	if _, err := c.Apply(ctx, deployment(ns, "dry"), kube.ApplyOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	webChanged, otherChanged := w.Changed("web"), w.Changed("other")

	out, err := c.Apply(ctx, deployment(ns, "web"), kube.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-webChanged:
	case <-time.After(30 * time.Second):
		t.Fatal("Changed(web) not closed after web was created")
	}
	select {
	case <-otherChanged:
		t.Error("Changed(other) closed by a change of web")
	default:
	}
	live, err := c.ListManaged(ctx, ns, "slipway.dev/group=kubetest")
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[plan.Key{Kind: "Deployment", Namespace: ns, Name: "web"}] == nil {
		t.Fatalf("ListManaged = %v, want only Deployment %s/web (the dry run stored nothing)", live, ns)
	}
	// A plan holds every listed object for the whole run; the field managers' records are
	// the largest part of a small object and nothing reads them (issue 17).
	if mf := live[plan.Key{Kind: "Deployment", Namespace: ns, Name: "web"}].GetManagedFields(); len(mf) != 0 {
		t.Errorf("ListManaged kept %d managedFields entries of Deployment %s/web, want none", len(mf), ns)
	}

	// The watch caches every pod of the namespace for a whole apply: it keeps what the wait
	// reads (status, labels, node, container names), not the spec (issue 17).
	podDeadline := time.Now().Add(30 * time.Second)
	for {
		_, _, pods, _ := w.Deployment(ns, "web")
		if len(pods) > 0 {
			p := pods[0]
			if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != "node" || p.Spec.Containers[0].Image != "" || p.Spec.Volumes != nil || p.ManagedFields != nil {
				t.Errorf("the watch cache keeps pod %s as %+v, want only its containers' names and node", p.Name, p.Spec)
			}
			break
		}
		if time.Now().After(podDeadline) {
			t.Fatal("no pod of web in the watch cache after 30s")
		}
		<-time.After(100 * time.Millisecond)
	}

	gen, err := c.Scale(ctx, ns, "web", 0)
	if err != nil {
		t.Fatal(err)
	}
	if gen <= out.GetGeneration() {
		t.Errorf("scale returned generation %d, want more than %d", gen, out.GetGeneration())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		dep, _, pods, _ := w.Deployment(ns, "web")
		if dep != nil && dep.Generation >= gen && *dep.Spec.Replicas == 0 && len(pods) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web not scaled to 0 in the watch cache: %v, %d pods", dep, len(pods))
		}
		<-time.After(100 * time.Millisecond)
	}
	// The watch caches every Deployment, ReplicaSet and pod of the namespace for a whole
	// apply; nothing reads their field managers' records (issue 17).
	dep, rss, _, _ := w.Deployment(ns, "web")
	if len(dep.ManagedFields) != 0 {
		t.Errorf("the watch cache keeps %d managedFields entries of Deployment %s/web", len(dep.ManagedFields), ns)
	}
	for _, rs := range rss {
		if len(rs.ManagedFields) != 0 {
			t.Errorf("the watch cache keeps %d managedFields entries of ReplicaSet %s/%s", len(rs.ManagedFields), ns, rs.Name)
		}
	}

	k := plan.Key{Kind: "Deployment", Namespace: ns, Name: "web"}
	// A delete of the object judged (its UID) leaves one of the same name made since
	// (issue 35, item 17).
	if err := c.Delete(ctx, k, "0d0a5e2c-not-its-uid"); err == nil || !strings.Contains(err.Error(), "the UID in the precondition") {
		t.Fatalf("Delete with another object's UID = %v, want a failed UID precondition", err)
	}
	judged, err := c.Get(ctx, k)
	if err != nil || judged == nil {
		t.Fatalf("the Deployment after a refused delete: %v, %v", judged, err)
	}
	if err := c.Delete(ctx, k, string(judged.GetUID())); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitGone(ctx, k, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, k, ""); err != nil {
		t.Errorf("deleting a missing object: %v, want no error", err)
	}
}
