package render

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"slipway.dev/slipway/internal/spec"
)

// stateVersion is the node's state version: the caller's (the file's, else the image's
// label), or the file's without one.
func (r *renderer) stateVersion(n *spec.Node) string {
	if r.in.StateVersions != nil {
		return r.in.StateVersions[n.Name]
	}
	return n.State.Version
}

// StateInitContainer runs the state step (StateScript) before the node's container, from the
// node's image, on the state volume: it copies /var/lib before a migration to version, and in
// the template a failed rollout goes back to, it puts the copy back (SPEC §6a).
func StateInitContainer(image, version string) corev1.Container {
	return corev1.Container{
		Name:         InitContainerState,
		Image:        image,
		Command:      []string{"/bin/sh", "-c", StateScript, InitContainerState, "start"},
		Env:          []corev1.EnvVar{{Name: EnvStateVersion, Value: version}},
		VolumeMounts: []corev1.VolumeMount{{Name: "state", MountPath: StateMountPath}},
	}
}

// StateInitVersion returns the version of a pod template's state step, and whether it has
// one.
func StateInitVersion(ps *corev1.PodSpec) (string, bool) {
	for _, c := range ps.InitContainers {
		if c.Name != InitContainerState {
			continue
		}
		for _, e := range c.Env {
			if e.Name == EnvStateVersion {
				return e.Value, true
			}
		}
		return "", true
	}
	return "", false
}

// WithStateRestore returns ps with its state step at version, naming the hand-over to
// failed: the template a failed migration to failed goes back to puts the copy taken at
// version and handed to failed back, and refuses any other copy. A template from before the
// node had a version has no step: it gets one, from its own image, in front of its init
// containers.
func WithStateRestore(ps *corev1.PodSpec, image, version, failed string) *corev1.PodSpec {
	out := ps.DeepCopy()
	env := []corev1.EnvVar{{Name: EnvStateVersion, Value: version}, {Name: EnvStateRestore, Value: failed}}
	for i := range out.InitContainers {
		if out.InitContainers[i].Name == InitContainerState {
			out.InitContainers[i].Env = env
			return out
		}
	}
	c := StateInitContainer(image, version)
	c.Env = env
	out.InitContainers = append([]corev1.Container{c}, out.InitContainers...)
	return out
}

// StateJobName is the Job that removes a node's copy: the claim's name (another kind).
func StateJobName(node string) string { return spec.ClaimName(node) }

// StateRemovalJob is the Job that removes node's copy after the release at version ran
// ready: the state step in mode remove, from the node's image, with the account, user
// namespace, RuntimeClass and placement of the node's pod template tmpl, on the host of the
// node's pod (hostName; "" when none runs), where its ReadWriteOnce volume is attached.
func StateRemovalJob(namespace, group, node, version, image, hostName string, tmpl *corev1.PodSpec) *batchv1.Job {
	no := int32(0)
	ttl := int32(600)
	labels := map[string]string{spec.LabelManagedBy: spec.ManagedBy, spec.LabelGroup: group, spec.LabelNode: node, spec.LabelName: StateJobName(node)}
	ps := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		ServiceAccountName:           tmpl.ServiceAccountName,
		AutomountServiceAccountToken: tmpl.AutomountServiceAccountToken,
		HostUsers:                    tmpl.HostUsers,
		EnableServiceLinks:           tmpl.EnableServiceLinks,
		RuntimeClassName:             tmpl.RuntimeClassName,
		NodeSelector:                 tmpl.NodeSelector,
		Tolerations:                  tmpl.Tolerations,
		NodeName:                     hostName,
		Volumes: []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: spec.ClaimName(node)}}}},
		Containers: []corev1.Container{{
			Name:         InitContainerState,
			Image:        image,
			Command:      []string{"/bin/sh", "-c", StateScript, InitContainerState, "remove"},
			Env:          []corev1.EnvVar{{Name: EnvStateVersion, Value: version}},
			VolumeMounts: []corev1.VolumeMount{{Name: "state", MountPath: StateMountPath}},
		}},
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: StateJobName(node), Namespace: namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:            &no,
			TTLSecondsAfterFinished: &ttl,
			Template:                corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: ps},
		},
	}
}
