package lane

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"slipway.dev/slipway/internal/render"
)

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
			if got := WasReady(tc.dep); got != tc.want {
				t.Errorf("WasReady = %v, want %v", got, tc.want)
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
	got := RollbackObject(prev)
	if got.ResourceVersion != "" || got.UID != "" {
		t.Errorf("rollback object carries resourceVersion %q / uid %q", got.ResourceVersion, got.UID)
	}
	if _, ok := got.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
		t.Error("rollback template keeps the pod-template-hash label")
	}
	if _, ok := prev.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; !ok {
		t.Error("RollbackObject changed the live object it was given")
	}
	if render.RunningImage(got.Spec.Template.Spec.Containers) != "r/web@sha256:a" || DigestOf("r/web@sha256:a") != "sha256:a" {
		t.Error("rollback image or digest wrong")
	}
}
