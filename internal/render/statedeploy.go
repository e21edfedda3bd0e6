package render

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The state step as the engine reads it from Deployments: the rollout and the migrate lane
// both do (SPEC §6a).

// DeploymentStateVersion is the state version of a Deployment's pod template: its state
// step's; "" without one.
func DeploymentStateVersion(d *unstructured.Unstructured) string {
	var dep appsv1.Deployment
	if d == nil || runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &dep) != nil {
		return ""
	}
	v, _ := StateInitVersion(&dep.Spec.Template.Spec)
	return v
}

// DeploymentWithStateRestore is prev with a state step that puts back the copy taken at
// version from and handed to version to: the template a failed migration goes back to puts
// that copy back before the node starts, and refuses a copy of any other hand-over.
func DeploymentWithStateRestore(prev *appsv1.Deployment, from, to string) *appsv1.Deployment {
	out := prev.DeepCopy()
	out.Spec.Template.Spec = *WithStateRestore(&prev.Spec.Template.Spec, RunningImage(prev.Spec.Template.Spec.Containers), from, to)
	return out
}
