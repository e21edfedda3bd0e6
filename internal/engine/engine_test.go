package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/state"
)

func TestImageRecord(t *testing.T) {
	got := imageRecord(plan.Image{Name: "web", Tag: "127.0.0.1:5000/demo/web:c-0123", Digest: "127.0.0.1:5000/demo/web@sha256:ab"})
	want := state.ImageRecord{Ref: "127.0.0.1:5000/demo/web", Tag: "c-0123", Digest: "sha256:ab"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("imageRecord (-want +got):\n%s", d)
	}
}

func TestDiffTouches(t *testing.T) {
	diff := []plan.FieldDiff{{Path: "spec.replicas"}, {Path: "spec.template.spec.containers[0].env[0].value"}}
	for _, tc := range []struct {
		part string
		want bool
	}{{"spec.template.", true}, {".image", false}, {"spec.replicas", true}} {
		if got := diffTouches(diff, tc.part); got != tc.want {
			t.Errorf("diffTouches(%q) = %v, want %v", tc.part, got, tc.want)
		}
	}
}

func TestWasReady(t *testing.T) {
	d := func(replicas, observed, gen, updated, ready, total int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: int64(gen)},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: int64(observed), UpdatedReplicas: updated,
				ReadyReplicas: ready, Replicas: total},
		}
	}
	for name, tc := range map[string]struct {
		dep  *appsv1.Deployment
		want bool
	}{
		"ready":                 {d(1, 2, 2, 1, 1, 1), true},
		"generation not seen":   {d(1, 1, 2, 1, 1, 1), false},
		"not ready":             {d(1, 2, 2, 1, 0, 1), false},
		"old pod still running": {d(1, 2, 2, 1, 1, 2), false},
		"suspended":             {d(0, 2, 2, 0, 0, 0), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := lane.WasReady(tc.dep); got != tc.want {
				t.Errorf("lane.WasReady = %v, want %v", got, tc.want)
			}
		})
	}
}

// The rollback object puts back the template alone, without the ReplicaSet's hash label, so
// the apply owns what it owned before.
func TestRollbackObject(t *testing.T) {
	prev := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo", Labels: map[string]string{"app.kubernetes.io/name": "web"},
			ResourceVersion: "9", UID: "u"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "web"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "r/web@sha256:a"}}},
			},
		},
	}
	got := rollbackObject(prev)
	if got.ResourceVersion != "" || got.UID != "" {
		t.Errorf("rollback object carries resourceVersion %q / uid %q", got.ResourceVersion, got.UID)
	}
	if _, ok := got.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		t.Error("rollback template keeps the pod-template-hash label")
	}
	if _, ok := prev.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; !ok {
		t.Error("rollbackObject changed the live object it was given")
	}
	if firstImage(got.Spec.Template.Spec.Containers) != "r/web@sha256:a" || lane.DigestOf("r/web@sha256:a") != "sha256:a" {
		t.Error("rollback image or digest wrong")
	}
}
