package rollout

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/engine/enginetest"
	"slipway.dev/slipway/internal/spec"
)

var _ Cluster = (*enginetest.Cluster)(nil) // the stand-in the lane's tests use

// deploymentNaming is Deployment web of namespace demo whose template names config hash.
func deploymentNaming(hash string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{spec.AnnotationConfigHash: hash}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "r/web@sha256:a"}}}}}}
}
