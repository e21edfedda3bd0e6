package lane

import (
	"maps"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/kube"
	"slipway.dev/slipway/internal/plan"
	"slipway.dev/slipway/internal/render"
	"slipway.dev/slipway/internal/spec"
)

// DeploymentWatch is the apply's cache of a namespace's Deployments, their ReplicaSets, pods
// and events, which rollouts wait on (kube.DeploymentCache).
type DeploymentWatch = kube.DeploymentCache

// RollbackTarget returns the Deployment as it should be set back to on a failed rollout: the
// live one when it runs ready, else the live one with the template of the ReplicaSet whose
// pod-template-hash is readyHash; nil when there is none (a first deploy).
func RollbackTarget(w DeploymentWatch, k plan.Key, readyHash string) *appsv1.Deployment {
	live, rss, _, _ := w.Deployment(k.Namespace, k.Name)
	if live == nil {
		return nil
	}
	if WasReady(live) {
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

// TemplateHash is the pod-template-hash of the Deployment's current ReplicaSet (the one of
// its revision), "" when the cache does not show it.
func TemplateHash(w DeploymentWatch, k plan.Key) string {
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

// WasReady reports whether a Deployment had all its replicas ready on its current template.
func WasReady(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return want > 0 && d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == want && d.Status.ReadyReplicas == want && d.Status.Replicas == want
}

// DigestOf returns the sha256:… part of a reference pinned by digest.
func DigestOf(ref string) string {
	if _, d, ok := strings.Cut(ref, "@"); ok {
		return d
	}
	return ref
}

// OptionalContainers are the containers of d's pods whose state never fails its rollout nor
// keeps a pod from counting ready: the companion, which has no probe because its work must
// not stop a rollout (FR-004g).
func OptionalContainers(d *appsv1.Deployment) []string {
	if d == nil {
		return nil
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == render.ContainerCompanion {
			return []string{c.Name}
		}
	}
	return nil
}
