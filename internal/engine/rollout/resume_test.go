package rollout

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"slipway.dev/slipway/internal/engine/lane"
)

// A stop asked right after resume's scale: the watch's copy of the Deployment may still show
// the suspend's 0 replicas, and the template set back must carry resume's replicas, or the
// node would be left down (TestInflightSuspendedApply/sigterm once saw 0 replicas).
func TestWithReplicas(t *testing.T) {
	zero := int32(0)
	for _, tc := range []struct {
		name     string
		prev     *appsv1.Deployment
		replicas int32
		want     int32
	}{
		{"stale watch copy at the suspend's 0", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &zero}}, 1, 1},
		{"no replicas written", &appsv1.Deployment{}, 1, 1},
		{"a node resumed to 0", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &zero}}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.prev.DeepCopy()
			got := withReplicas(tc.prev, tc.replicas)
			if got.Spec.Replicas == nil || *got.Spec.Replicas != tc.want {
				t.Errorf("replicas %v, want %d", got.Spec.Replicas, tc.want)
			}
			if lane.RollbackObject(got).Spec.Replicas == nil || *lane.RollbackObject(got).Spec.Replicas != tc.want {
				t.Errorf("the rollback object does not carry %d replicas", tc.want)
			}
			if (before.Spec.Replicas == nil) != (tc.prev.Spec.Replicas == nil) || (before.Spec.Replicas != nil && *before.Spec.Replicas != *tc.prev.Spec.Replicas) {
				t.Error("withReplicas changed the watch's copy it was given")
			}
		})
	}
	if withReplicas(nil, 1) != nil {
		t.Error("withReplicas(nil) is not nil: no template to set back")
	}
}
