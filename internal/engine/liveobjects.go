package engine

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/engine/lane"
	"slipway.dev/slipway/internal/plan"
)

// A plan reads the live objects as the cluster client gave them (plan.Object): typed for the
// built-in kinds, so that a no-op plan turns none of its 5,000 objects into maps (issue 17).
// The readers that look inside every node's object read the typed fields; lane.AsTyped converts
// an unstructured one (a list that came as JSON, the engine's fake cluster) for them.

// liveContainers are the containers of a live Deployment's pod template, nil for none.
func liveContainers(o plan.Object) []corev1.Container {
	if d := lane.AsTyped[appsv1.Deployment](o); d != nil {
		return d.Spec.Template.Spec.Containers
	}
	return nil
}

// liveContainerImage is the image of the named container of a live Deployment, "" for none.
func liveContainerImage(o plan.Object, container string) string {
	for _, c := range liveContainers(o) {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}
