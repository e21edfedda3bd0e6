package engine

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// rollbackObject is an apply configuration that puts the previous pod template back, with
// slipway's labels and strategy, so the apply owns exactly what it owned before.
func rollbackObject(prev *appsv1.Deployment) *appsv1.Deployment {
	tmpl := prev.Spec.Template.DeepCopy()
	delete(tmpl.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	meta := metav1ObjectMeta(prev.Name, prev.Namespace, prev.Labels)
	if h := prev.Annotations[spec.AnnotationAppliedHash]; h != "" {
		// The hash of the object set back: a file back at it is No changes again, a file
		// that still differs is a change (the live one lacks what it sets, or the hash).
		meta.Annotations = map[string]string{spec.AnnotationAppliedHash: h}
	}
	return &appsv1.Deployment{
		TypeMeta:   render.DeploymentTypeMeta,
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: prev.Spec.Replicas,
			Selector: prev.Spec.Selector,
			Strategy: prev.Spec.Strategy,
			Template: *tmpl,
		},
	}
}

// firstImage is the image a pod of containers cs runs (render.RunningImage).
func firstImage(cs []corev1.Container) string { return render.RunningImage(cs) }

func metav1ObjectMeta(name, ns string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: maps.Clone(labels)}
}

// withReplicas is prev, copied, with the replicas resume set: the watch's copy of the
// Deployment may not show resume's scale yet (a stop asked right after it), and setting back
// with the replicas of the suspend would leave the node down.
func withReplicas(prev *appsv1.Deployment, replicas int32) *appsv1.Deployment {
	if prev == nil {
		return nil
	}
	prev = prev.DeepCopy()
	prev.Spec.Replicas = &replicas
	return prev
}
