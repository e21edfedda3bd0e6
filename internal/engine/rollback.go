package engine

import (
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// rollbackTarget returns the Deployment as it should be set back to on a failed rollout: the
// live one when it runs ready, else the live one with the template of the ReplicaSet whose
// pod-template-hash is readyHash; nil when there is none (a first deploy).
func rollbackTarget(w deploymentWatch, k plan.Key, readyHash string) *appsv1.Deployment {
	live, rss, _, _ := w.Deployment(k.Namespace, k.Name)
	if live == nil {
		return nil
	}
	if wasReady(live) {
		return live
	}
	if readyHash == "" {
		return nil
	}
	for _, rs := range rss {
		if rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == readyHash && metav1.IsControlledBy(rs, live) {
			prev := live.DeepCopy()
			prev.Spec.Template = *rs.Spec.Template.DeepCopy()
			// The Deployment controller copies a Deployment's annotations to the ReplicaSet of
			// its template: the ReplicaSet's applied hash is the one of that template.
			prev.Annotations = maps.Clone(prev.Annotations)
			if h := rs.Annotations[spec.AnnotationAppliedHash]; h != "" {
				prev.Annotations[spec.AnnotationAppliedHash] = h
			} else {
				delete(prev.Annotations, spec.AnnotationAppliedHash)
			}
			return prev
		}
	}
	return nil
}

// templateHash is the pod-template-hash of the Deployment's current ReplicaSet (the one of
// its revision), "" when the cache does not show it.
func templateHash(w deploymentWatch, k plan.Key) string {
	live, rss, _, _ := w.Deployment(k.Namespace, k.Name)
	if live == nil {
		return ""
	}
	rev := live.Annotations["deployment.kubernetes.io/revision"]
	for _, rs := range rss {
		if rev != "" && rs.Annotations["deployment.kubernetes.io/revision"] == rev && metav1.IsControlledBy(rs, live) {
			return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	}
	return ""
}

// wasReady reports whether a Deployment had all its replicas ready on its current template.
func wasReady(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return want > 0 && d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == want && d.Status.ReadyReplicas == want && d.Status.Replicas == want
}

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

// digestOf returns the sha256:… part of a reference pinned by digest.
func digestOf(ref string) string {
	if _, d, ok := strings.Cut(ref, "@"); ok {
		return d
	}
	return ref
}

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
