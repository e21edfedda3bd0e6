package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/devcluster/devtest"
	"slipway.dev/slipway/internal/kube"
)

// The dev cluster's default StorageClass binds claims as they are made, a class that does not
// exist says nothing; the watch sees a new claim go from Pending to Bound and wakes its
// waiter under the claim's own name.
func TestClaimsAgainstDevCluster(t *testing.T) {
	env := devtest.Env(t)
	c, err := kube.New(env.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		class string
		want  bool
	}{{"", true}, {"kwok-volume", true}, {"no-such-class", false}} {
		got, err := c.ClaimsBindImmediately(ctx, tc.class)
		if err != nil || got != tc.want {
			t.Errorf("ClaimsBindImmediately(%q) = %v, %v; want %v", tc.class, got, err, tc.want)
		}
	}

	ns := fmt.Sprintf("claimtest-%x", time.Now().UnixNano()%0xffffff)
	if _, err := c.Apply(ctx, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: ns}}, kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteNamespaceAndWait(context.Background(), ns, "") })
	w, err := c.Watch(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := w.ClaimPhase(ns, "a-state"); got != "" {
		t.Fatalf("phase of a claim not made yet: %q", got)
	}
	changed := w.Changed(kube.ClaimWakeup("a-state"))
	claim := &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "a-state", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := c.Apply(ctx, claim, kube.ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(60 * time.Second)
	for w.ClaimPhase(ns, "a-state") != corev1.ClaimBound {
		select {
		case <-changed:
			changed = w.Changed(kube.ClaimWakeup("a-state"))
		case <-deadline:
			t.Fatalf("claim a-state %q after 60s, want Bound", w.ClaimPhase(ns, "a-state"))
		}
	}
}
