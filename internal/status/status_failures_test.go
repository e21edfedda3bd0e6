package status_test

// TestRollout's rows (status_test.go) of image pulls, other certain failures, and unschedulable,
// unready and late pods.

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"slipway.dev/slipway/internal/status"
)

const pullMsg = `failed to pull and unpack image "` + imageNew + `": not found`

// rolloutPulls are TestRollout's rows of image pulls that fail, or may still succeed.
var rolloutPulls = []rolloutCase{
	{
		name: "ErrImagePull within the grace",
		setup: func(w *world) {
			w.notReady()
			waiting(w.pod(), "ErrImagePull", pullMsg)
			w.now = 11 * time.Second // 10 s after the pod's creation: not beyond
		},
		want: status.Result{
			Phase: status.Progressing, Reason: "ErrImagePull", Pod: "web-new-1",
			Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ErrImagePull): ` + pullMsg,
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "ErrImagePull beyond the grace",
		setup: func(w *world) {
			w.notReady()
			waiting(w.pod(), "ErrImagePull", pullMsg)
			w.now = 12 * time.Second
		},
		want: status.Result{
			Phase: status.Failed, Reason: "ErrImagePull", Pod: "web-new-1",
			Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ErrImagePull): ` + pullMsg,
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "ImagePullBackOff beyond the grace",
		setup: func(w *world) {
			w.notReady()
			waiting(w.pod(), "ImagePullBackOff", `Back-off pulling image "`+imageNew+`"`)
			w.now = 12 * time.Second
		},
		want: status.Result{
			Phase: status.Failed, Reason: "ImagePullBackOff", Pod: "web-new-1",
			Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ImagePullBackOff): Back-off pulling image "` + imageNew + `"`,
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "ImagePullBackOff measured from the first pull event",
		setup: func(w *world) {
			w.notReady()
			waiting(w.pod(), "ImagePullBackOff", "Back-off pulling image")
			w.events = []*corev1.Event{
				event("e1", "Pod", "web-new-1", "web-new-1-uid", "Pulling", "Pulling image", 2*time.Second, 2*time.Second, 1),
				event("e2", "Pod", "web-new-1", "web-new-1-uid", "Failed", "Failed to pull image: 502 Bad Gateway", 4*time.Second, 9*time.Second, 2),
				event("e3", "Pod", "web-new-1", "web-new-1-uid", "BackOff", "Back-off pulling image", 5*time.Second, 9*time.Second, 2),
			}
			w.now = 14 * time.Second // 13 s after creation, 10 s after the first failure
		},
		want: status.Result{
			Phase: status.Progressing, Reason: "ImagePullBackOff", Pod: "web-new-1",
			Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ImagePullBackOff): Back-off pulling image`,
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "pull error still within the grace at the limit",
		setup: func(w *world) {
			w.notReady()
			w.pod().CreationTimestamp = at(15 * time.Second)
			waiting(w.pod(), "ErrImagePull", pullMsg)
			w.now = limit
		},
		want: status.Result{
			Phase: status.Failed, Reason: "ErrImagePull", Pod: "web-new-1",
			Message: `pod web-new-1: container node: cannot pull image "` + imageNew + `" (ErrImagePull): ` + pullMsg,
			Desired: 1, Updated: 1,
		},
	},
}

// rolloutFailures are TestRollout's rows of other certain failures.
var rolloutFailures = []rolloutCase{
	{
		name: "CrashLoopBackOff fails at once",
		setup: func(w *world) {
			w.notReady()
			p := w.pod()
			waiting(p, "CrashLoopBackOff", "back-off 10s restarting failed container=node")
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses[0].RestartCount = 3
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
			w.now = 2 * time.Second
		},
		want: status.Result{
			Phase: status.Failed, Reason: "CrashLoopBackOff", Pod: "web-new-1",
			Message: "pod web-new-1: container node: back-off restarting failed container (restarts 3, last exit code 1)",
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "container exited non-zero",
		setup: func(w *world) {
			w.notReady()
			p := w.pod()
			unready(p)
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}
		},
		want: status.Result{
			Phase: status.Failed, Reason: "ContainerExited", Pod: "web-new-1",
			Message: "pod web-new-1: container node: exited with code 2",
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "init container OOMKilled",
		setup: func(w *world) {
			w.notReady()
			p := w.pod()
			waiting(p, "PodInitializing", "")
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{
				Name:  "setup",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", Message: "out of\nmemory"}},
			}}
		},
		want: status.Result{
			Phase: status.Failed, Reason: "ContainerExited", Pod: "web-new-1",
			Message: "pod web-new-1: init container setup: exited with code 137 (OOMKilled): out of memory",
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "exit code 0 is not a failure",
		setup: func(w *world) {
			w.notReady()
			p := w.pod()
			unready(p)
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
		},
		want: status.Result{
			Phase: status.Progressing, Reason: "NotReady", Pod: "web-new-1",
			Message: "pod web-new-1: not ready yet: containers with unready status: [node]",
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "CreateContainerConfigError",
		setup: func(w *world) {
			w.notReady()
			waiting(w.pod(), "CreateContainerConfigError", `secret "web-env" not found`)
		},
		want: status.Result{
			Phase: status.Failed, Reason: "CreateContainerConfigError", Pod: "web-new-1",
			Message: `pod web-new-1: container node: cannot start (CreateContainerConfigError): secret "web-env" not found`,
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "InvalidImageName",
		setup: func(w *world) {
			w.notReady()
			waiting(w.pod(), "InvalidImageName", `Failed to apply default image tag "Web": invalid reference format`)
		},
		want: status.Result{
			Phase: status.Failed, Reason: "InvalidImageName", Pod: "web-new-1",
			Message: `pod web-new-1: container node: cannot start (InvalidImageName): Failed to apply default image tag "Web": invalid reference format`,
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "a crash loop beats another pod's unreadiness",
		setup: func(w *world) {
			w.d.Spec.Replicas = ptr(int32(2))
			w.newRS.Spec.Replicas = ptr(int32(2))
			w.notReady()
			unready(w.pod())
			p := readyPod(w.newRS, "web-new-2")
			waiting(p, "CrashLoopBackOff", "back-off")
			w.pods = append(w.pods, p)
		},
		want: status.Result{
			Phase: status.Failed, Reason: "CrashLoopBackOff", Pod: "web-new-2",
			Message: "pod web-new-2: container node: back-off restarting failed container (restarts 0)",
			Desired: 2, Updated: 2,
		},
	},
	{
		name: "FailedCreate on the new replica set",
		setup: func(w *world) {
			w.notReady()
			w.pods = nil
			w.newRS.Status.Replicas = 0
			w.newRS.Status.Conditions = []appsv1.ReplicaSetCondition{{
				Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
				Message: `pods "web-new-x7k2p" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10`,
			}}
		},
		want: status.Result{
			Phase: status.Failed, Reason: "FailedCreate",
			Message: `replica set web-new: pods "web-new-x7k2p" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10`,
			Desired: 1,
		},
	},
	{
		name: "FailedCreate on the deployment",
		setup: func(w *world) {
			w.notReady()
			w.pods = nil
			w.d.Status.Conditions = append(w.d.Status.Conditions, appsv1.DeploymentCondition{
				Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
				Message: `pods "web-new-x7k2p" is forbidden: violates PodSecurity "restricted:latest"`,
			})
		},
		want: status.Result{
			Phase: status.Failed, Reason: "FailedCreate",
			Message: `deployment web: pods "web-new-x7k2p" is forbidden: violates PodSecurity "restricted:latest"`,
			Desired: 1,
		},
	},
	{
		name: "ProgressDeadlineExceeded",
		setup: func(w *world) {
			w.notReady()
			waiting(w.pod(), "ContainerCreating", "")
			w.d.Status.Conditions = []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				Message: `ReplicaSet "web-new" has timed out progressing.`,
			}}
		},
		want: status.Result{
			Phase: status.Failed, Reason: "ProgressDeadlineExceeded",
			Message: `deployment web: progress deadline exceeded: ReplicaSet "web-new" has timed out progressing.`,
			Desired: 1, Updated: 1,
		},
	},
}

// rolloutLate are TestRollout's rows of unschedulable, unready and late pods.
var rolloutLate = []rolloutCase{
	{
		name: "Unschedulable before the limit",
		setup: func(w *world) {
			w.notReady()
			p := w.pod()
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			setCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient memory."})
			w.now = 19 * time.Second
		},
		want: status.Result{
			Phase: status.Progressing, Reason: "Unschedulable", Pod: "web-new-1",
			Message: "pod web-new-1: not scheduled: 0/1 nodes are available: 1 Insufficient memory.",
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "Unschedulable at the limit",
		setup: func(w *world) {
			w.notReady()
			p := w.pod()
			p.Status = corev1.PodStatus{Phase: corev1.PodPending}
			setCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient memory."})
			w.now = limit
		},
		want: status.Result{
			Phase: status.Failed, Reason: "Unschedulable", Pod: "web-new-1",
			Message: "pod web-new-1: not scheduled within 20s: 0/1 nodes are available: 1 Insufficient memory.",
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "not ready past the limit",
		setup: func(w *world) {
			w.notReady()
			unready(w.pod())
			w.now = 21 * time.Second
		},
		want: status.Result{
			Phase: status.Failed, Reason: "NotReady", Pod: "web-new-1",
			Message: "pod web-new-1: container node: did not become ready within 20s: containers with unready status: [node]",
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "timeout: old pod never went away",
		setup: func(w *world) {
			w.notReady()
			old := readyPod(w.oldRS, "web-old-1")
			old.DeletionTimestamp = ptr(at(time.Second))
			w.pods = []*corev1.Pod{old}
			w.now = limit
		},
		want: status.Result{
			Phase: status.Failed, Reason: "Timeout",
			Message: "not ready within 20s: 1 of 1 new pods not ready; 1 old pod still present",
			Desired: 1, OldPods: 1,
		},
	},
	{
		name: "timeout: pod stuck creating names the pod",
		setup: func(w *world) {
			w.notReady()
			waiting(w.pod(), "ContainerCreating", "")
			w.now = limit
		},
		want: status.Result{
			Phase: status.Failed, Reason: "Timeout", Pod: "web-new-1",
			Message: "not ready within 20s: 1 of 1 new pods not ready (pod web-new-1: pending, container node waiting (ContainerCreating))",
			Desired: 1, Updated: 1,
		},
	},
	{
		name: "timeout: generation never observed",
		setup: func(w *world) {
			w.d.Generation = 3
			w.now = time.Minute
		},
		want: status.Result{
			Phase: status.Failed, Reason: "Timeout",
			Message: "not done within 20s: deployment web: generation 3 not yet observed by the controller (observed 2)",
			Desired: 1,
		},
	},
}
