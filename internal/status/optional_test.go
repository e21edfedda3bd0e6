package status_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/status"
)

// withCompanion gives w's templates and pod a native sidecar "secrets" (started and ready)
// and a container "companion" without a probe, both running, as a role with sidecarSecrets
// and companion: true has (FR-004e, FR-004g).
func withCompanion(w *world) {
	always := corev1.ContainerRestartPolicyAlways
	for _, t := range []*corev1.PodTemplateSpec{&w.d.Spec.Template, &w.oldRS.Spec.Template, &w.newRS.Spec.Template} {
		t.Spec.InitContainers = []corev1.Container{{Name: "secrets", Image: "r/secrets", RestartPolicy: &always}}
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: "companion", Image: t.Spec.Containers[0].Image})
	}
	p := w.pod()
	p.Spec = w.newRS.Spec.Template.Spec
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(2 * time.Second)}}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "secrets", Ready: true, Started: ptr(true), State: running}}
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "companion", Ready: true, Started: ptr(true), State: running})
}

// companionDown puts the companion in state st, the pod not ready for Kubernetes (which counts
// every container), the controllers' counts with it.
func companionDown(w *world, st corev1.ContainerState) {
	p := w.pod()
	cs := &p.Status.ContainerStatuses[1]
	cs.Ready, cs.Started, cs.State, cs.RestartCount = false, ptr(false), st, 4
	cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [companion]"
		}
	}
	w.notReady()
}

var (
	crashLoop = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=companion"}}
	exited    = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
)

// TestRolloutOptionalCompanion: a companion is never a reason for a failed rollout (FR-004g):
// with Input.Optional naming it, its crash loop or exit neither fails the rollout nor keeps its
// pod from counting ready, even as Kubernetes calls the pod not ready and the progress deadline
// passes; the service and the native sidecar still count.
func TestRolloutOptionalCompanion(t *testing.T) {
	ready := status.Result{Phase: status.Ready, Message: "1 of 1 pods ready", Ready: 1, Desired: 1, Updated: 1}
	for _, tc := range []struct {
		name     string
		optional []string
		setup    func(w *world)
		want     status.Result
	}{
		{name: "all running", optional: []string{"companion"}, setup: func(*world) {}, want: ready},
		{name: "companion in a crash loop", optional: []string{"companion"},
			setup: func(w *world) { companionDown(w, crashLoop) }, want: ready},
		{name: "companion exited", optional: []string{"companion"},
			setup: func(w *world) { companionDown(w, exited) }, want: ready},
		{name: "companion down past the progress deadline", optional: []string{"companion"},
			setup: func(w *world) {
				companionDown(w, crashLoop)
				w.d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
					Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-new" has timed out progressing.`}}
			},
			want: ready},
		{name: "not optional: the companion's crash loop fails it",
			setup: func(w *world) { companionDown(w, crashLoop) },
			want: status.Result{Phase: status.Failed, Reason: "CrashLoopBackOff", Pod: "web-new-1", Desired: 1, Updated: 1,
				Message: "pod web-new-1: container companion: back-off restarting failed container (restarts 4, last exit code 1)"}},
		{name: "the service in a crash loop still fails it", optional: []string{"companion"},
			setup: func(w *world) {
				companionDown(w, crashLoop)
				cs := &w.pod().Status.ContainerStatuses[0]
				cs.Ready, cs.State, cs.RestartCount = false, crashLoop, 3
			},
			want: status.Result{Phase: status.Failed, Reason: "CrashLoopBackOff", Pod: "web-new-1", Desired: 1, Updated: 1,
				Message: "pod web-new-1: container node: back-off restarting failed container (restarts 3)"}},
		{name: "the service not ready yet", optional: []string{"companion"},
			setup: func(w *world) {
				companionDown(w, crashLoop)
				w.pod().Status.ContainerStatuses[0].Ready = false
			},
			want: status.Result{Phase: status.Progressing, Reason: "NotReady", Pod: "web-new-1", Desired: 1, Updated: 1,
				Message: "pod web-new-1: container node: not ready yet: containers with unready status: [companion]"}},
		{name: "the sidecar not started yet", optional: []string{"companion"},
			setup: func(w *world) {
				companionDown(w, crashLoop)
				w.pod().Status.InitContainerStatuses[0].Ready = false
			},
			want: status.Result{Phase: status.Progressing, Reason: "NotReady", Pod: "web-new-1", Desired: 1, Updated: 1,
				Message: "pod web-new-1: init container secrets: not ready yet: containers with unready status: [companion]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := done()
			withCompanion(w)
			tc.setup(w)
			in := w.input()
			in.Optional = tc.optional
			if diff := cmp.Diff(tc.want, status.Rollout(in)); diff != "" {
				t.Errorf("Rollout (-want +got):\n%s", diff)
			}
		})
	}
}
