package render

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/spec"
)

// systemdReady is ready only when systemd reports `running`: `systemctl is-system-running`
// exits non-zero while starting and when degraded (FR-005). Not ready, it prints the state and
// the failed units' `systemctl --failed` lines: the kubelet puts a failed probe's output in its
// event ("Readiness probe failed: system degraded broken.service loaded failed failed …"),
// which a rollout's failure report shows, so the unit that failed is named. It needs /bin/sh
// in the image, as every systemd distribution has. No `$(…)`: the kubelet expands `$(NAME)` in
// an exec probe's command from the container's environment.
var systemdReady = &spec.Probe{Exec: []string{"/bin/sh", "-c", systemdReadyScript}}

const systemdReadyScript = "state=`systemctl is-system-running` && exit 0; echo system $state; " +
	"systemctl --failed --no-legend --no-pager --plain --full; exit 1"

// systemdPod gives an init: systemd node's pod and container what systemd as PID 1 needs.
// systemd mounts nothing without CAP_SYS_ADMIN, and Debian's systemd 252 treats a failed tmpfs
// on /run/lock as fatal ("Failed to mount API filesystems", exit 255 on a real node): each of
// its tmpfs directories is a memory-backed emptyDir.
func (r *renderer) systemdPod(ps *corev1.PodSpec, c *corev1.Container) {
	for _, dir := range []string{"run", "run/lock", "tmp"} {
		name := strings.ReplaceAll(dir, "/", "-")
		ps.Volumes = append(ps.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/" + dir})
	}
	if r.in.StopSignal {
		// systemd shuts down cleanly on SIGRTMIN+3; the API allows a stop signal only with the
		// pod's OS set.
		sig := corev1.SIGRTMINPLUS3
		c.Lifecycle = &corev1.Lifecycle{StopSignal: &sig}
		ps.OS = &corev1.PodOS{Name: corev1.Linux}
	}
}
