package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// forTheWait is the transform of the apply's watch caches: it drops what no reader of the
// cache (the rollout's wait, status, the failure report, rollback, remove-copy) reads,
// before the object is stored. A 1,000-node apply holds every Deployment, ReplicaSet, pod and
// event of the namespace until it ends (issue 17).
//
//   - every object: its field managers' records (managedFields);
//   - a pod: its spec but for the node it runs on and its containers' names (the failure
//     report picks the container whose log it shows by name), and its annotations; its
//     status, labels and owners stay whole (status reads them);
//   - an event: who reported it (source, reporting controller and instance) and the related
//     object;
//   - a claim: its spec and annotations (a new node's wait reads its phase).
//
// Deployments and ReplicaSets stay whole but for managedFields: status compares their pod
// templates to find the new ReplicaSet, and a rollback applies an old ReplicaSet's template.
func forTheWait(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		slimPod(o)
	case *corev1.PersistentVolumeClaim:
		o.Annotations, o.Spec = nil, corev1.PersistentVolumeClaimSpec{} // a wait reads its phase
	case *corev1.Event:
		o.Source = corev1.EventSource{}
		o.ReportingController, o.ReportingInstance = "", ""
		o.Related = nil
	}
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// slimPod keeps of p what the readers of the watch cache read (see forTheWait).
func slimPod(p *corev1.Pod) {
	p.Annotations = nil
	p.Spec = corev1.PodSpec{
		NodeName:       p.Spec.NodeName,
		InitContainers: containerNames(p.Spec.InitContainers),
		Containers:     containerNames(p.Spec.Containers),
	}
}

func containerNames(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name}
	}
	return out
}
